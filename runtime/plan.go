package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/weft-ml/weft/backends"
	_ "github.com/weft-ml/weft/backends/all" // registers the backends
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/safefile"
	"github.com/weft-ml/weft/model"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/passes"
)

// PlanFormat and PlanVersion identify plan files this build can read.
const (
	PlanFormat  = "weft-plan"
	PlanVersion = 3 // 2: the repacked side file is fingerprinted; 3: full checksum, content-tagged side file, model path relative to the plan
)

// Plan is a compiled model: the graph, its parameters and a reference to
// the GGUF file holding the weights. It is stored as JSON.
type Plan struct {
	Format  string         `json:"format"`
	Version int            `json:"version"`
	Model   ModelRef       `json:"model"`
	Params  model.Params   `json:"params"`
	Run     RunParams      `json:"run"`
	Graph   *graph.Graph   `json:"graph"`
	Passes  []PassLogEntry `json:"passes,omitempty"`
	Lowered int            `json:"lowered_nodes,omitempty"` // node count before the passes
	// CustomOps lists the ops of the compiling program's own
	// (ops.Register) the graph uses: a program must register them before
	// it can load the plan.
	CustomOps []string `json:"custom_ops,omitempty"`

	// PackedFile names the side file (beside the plan) holding weights
	// repacked at compile time; its name carries a content tag so a
	// recompile never mixes old and new. PackedSum fingerprints it cheaply
	// (checked at load), PackedCRC is the CRC-32C of every byte (checked
	// in the background after load: see verifyPacked). Packed holds its
	// bytes.
	PackedFile string `json:"packed_file,omitempty"`
	PackedSum  string `json:"packed_sum,omitempty"`
	PackedCRC  string `json:"packed_crc32c,omitempty"`
	Packed     []byte `json:"-"`

	unmapPacked func() error // set when Packed is a mapping of its own
	check       packedCheck  // background verification of a mapped side file
	path        string       // the plan file, when read from one
	sidePath    string       // the side file, when mapped from one
}

// releasingFile lets the weight-layout pass drop the mapped pages of each
// tensor it repacks, so the repacked copy replaces them in memory.
type releasingFile struct{ *gguf.File }

func (f releasingFile) ReleaseTensorData(t *gguf.TensorInfo) { dropPages(f.TensorData(t)) }

// ModelRef names the weights file and fingerprints it, so a plan is never
// run against a different file.
type ModelRef struct {
	Path        string `json:"path"`               // as given to the compiler
	AbsPath     string `json:"abs_path"`           // absolute path at compile time
	RelPath     string `json:"rel_path,omitempty"` // relative to the plan's folder, when written
	Size        int64  `json:"size"`               // file size in bytes
	Fingerprint string `json:"fingerprint"`        // sha256 of the header and tensor table
}

// RunParams are the run-time defaults chosen at compile time.
type RunParams struct {
	Ctx    int    `json:"ctx"`     // KV cache positions
	Batch  int    `json:"batch"`   // largest prefill batch
	KVType string `json:"kv_type"` // "f16", "f32", "q8_0" or "q4_0"
	// FlashAttn makes sessions compute attention as llama.cpp's -fa does
	// (backends.StateOptions.FlashAttn). Off by default, as in llama.cpp.
	FlashAttn bool `json:"flash_attn,omitempty"`
	// FlashAcc is flash attention's accumulator with an f16 V cache:
	// "" or "f16", llama.cpp's; "f32", weft's faster opt-in
	// (backends.StateOptions.FlashF32Acc). It needs FlashAttn.
	FlashAcc string `json:"flash_acc,omitempty"`
}

// PassLogEntry records what one optimisation pass changed.
type PassLogEntry = passes.LogEntry

// Fingerprint hashes the header and tensor table of f (everything before
// the data section) together with the file size.
func Fingerprint(path string, f *gguf.File) (string, error) {
	fh, err := safefile.OpenRegular(path, "model file")
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.CopyN(h, fh, min(f.DataOffset, f.Size())); err != nil {
		return "", fmt.Errorf("fingerprinting %s: %w", path, err)
	}
	fmt.Fprintf(h, "size=%d", f.Size())
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CompileOptions configure Compile.
type CompileOptions struct {
	// Backend is the preferred backend for placement ("": the host
	// alone); nodes it cannot run go to the host (cpu).
	Backend string

	Ctx    int    // 0: min(2048, the model's training context)
	Batch  int    // 0: 512
	KVType string // "": f16
	// FlashAttn is the plan's run.flash_attn (sessions may also ask for
	// it themselves).
	FlashAttn bool
	// FlashAcc is the plan's run.flash_acc ("", "f16" or "f32").
	FlashAcc string

	Passes    []string // run only these passes, in this order (empty: all)
	Disable   []string // passes to leave out
	O0        bool     // no optimisation: placement only
	DumpAfter []string // pass names, or "all": call Dump after them
	Dump      func(pass string, g *graph.Graph) error
	// Insert adds the program's own passes to the selected ones, before
	// or after a named pass (passes.Insert); they are verified, logged in
	// the plan and dumped like the built-ins.
	Insert []passes.Insertion

	// packedMem, when set, provides the memory for the repacked weights
	// and the function that releases it: huge pages when the plan runs
	// here (Open), the side file's mapping when it is saved (CompileTo).
	// nil: the Go heap.
	packedMem func(size int) ([]byte, func() error, error)
}

// Compile lowers the GGUF model at path into a plan.
func Compile(path string, o CompileOptions) (*Plan, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	l, err := model.Lower(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fp, err := Fingerprint(path, f)
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(path)
	run, err := o.resolve(l.Params)
	if err != nil {
		return nil, err
	}
	if l.Params.LongRoPECtx > 0 && run.Ctx > l.Params.LongRoPECtx {
		// The graph depends on the context (LongRoPE's long factors).
		if l, err = model.LowerFor(f, run.Ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	p := &Plan{
		Format: PlanFormat, Version: PlanVersion,
		Model:  ModelRef{Path: path, AbsPath: abs, Size: f.Size(), Fingerprint: fp},
		Params: l.Params, Run: run, Graph: l.Graph, Lowered: len(l.Graph.Nodes),
	}
	if err := p.optimise(f, o); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p.CustomOps = ops.CustomOps(p.Graph)
	return p, nil
}

// hostBackend runs what no other backend takes, and holds the inputs.
const hostBackend = "cpu"

// optimise runs the selected passes for the registered host backend.
func (p *Plan) optimise(f *gguf.File, o CompileOptions) error {
	list, err := o.placementOrder()
	if err != nil {
		return err
	}
	cfg := passes.Config{Backends: list, Tokens: p.Run.Batch, Weights: releasingFile{f}, Packed: &p.Packed}
	if o.packedMem != nil {
		cfg.Alloc = func(size int) ([]byte, error) { return p.adoptPacked(o.packedMem(size)) }
	}
	selected, err := passes.Select(cfg, o.Passes, o.Disable, o.O0)
	if err != nil {
		return err
	}
	if selected, err = passes.Insert(selected, o.Insert...); err != nil {
		return err
	}
	pl := passes.Pipeline{Passes: selected, DumpAfter: o.DumpAfter, Dump: o.Dump}
	p.Passes, err = pl.Run(p.Graph)
	return err
}

// resolve fills in the run parameters' defaults and bounds them. As in
// llama.cpp, a context longer than the model's training context is
// allowed (llama.cpp only warns "possible training context overflow"):
// whether quality holds past it is the user's call. Like llama.cpp for
// causal models (n_batch = min(n_ctx, n_batch)), the batch is capped at
// the context, as a batch never holds more tokens than the cache: a huge
// --batch costs no memory and wraps nothing. The context is bounded by
// maxContext (positions are 32-bit); whether a session of that size fits
// in memory is checked when one is made (the backend's NewState), not
// here: a plan may be compiled for another machine.
// placementOrder is the preferred backend, then the host.
func (o CompileOptions) placementOrder() ([]backends.Backend, error) {
	names := []string{hostBackend}
	if o.Backend != "" && o.Backend != hostBackend {
		names = []string{o.Backend, hostBackend}
	}
	var list []backends.Backend
	for _, n := range names {
		b, err := backends.Lookup(n)
		if err != nil {
			return nil, err
		}
		list = append(list, b)
	}
	return list, nil
}

func (o CompileOptions) resolve(p model.Params) (RunParams, error) {
	r := RunParams{Ctx: o.Ctx, Batch: o.Batch, KVType: o.KVType, FlashAttn: o.FlashAttn, FlashAcc: o.FlashAcc}
	if r.Ctx == 0 {
		r.Ctx = 2048
		if p.CtxTrain > 0 {
			r.Ctx = min(r.Ctx, p.CtxTrain)
		}
	}
	if r.Batch == 0 {
		r.Batch = 512
	}
	if r.KVType == "" {
		r.KVType = "f16"
	}
	if r.Ctx < 1 || r.Ctx > maxContext {
		return r, fmt.Errorf("context of %d tokens: want 1 to %d (--ctx)", r.Ctx, maxContext)
	}
	if r.Batch < 1 {
		return r, fmt.Errorf("batch of %d tokens: want 1 or more (--batch)", r.Batch)
	}
	r.Batch = min(r.Batch, r.Ctx) // ≤ maxContext
	kt, err := backends.ParseKVType(r.KVType)
	if err != nil {
		return r, err
	}
	if err := backends.CheckKV(kt, r.FlashAttn); err != nil {
		return r, err
	}
	return r, checkFlashAcc(r.FlashAcc, r.FlashAttn)
}

// FlashAccUsage is the --flash-acc flag's help, the same in every command.
const FlashAccUsage = "flash attention's accumulator with an f16 KV cache: f16, llama.cpp's numerics (default), or f32, faster on the CPU but not llama.cpp's numerics (ik_llama.cpp's choice); needs --flash-attn"

// checkFlashAcc refuses a bad --flash-acc, or one without flash attention.
func checkFlashAcc(acc string, flash bool) error {
	f32, err := backends.ParseFlashAcc(acc)
	if err != nil {
		return err
	}
	return backends.CheckFlashAcc(backends.StateOptions{FlashAttn: flash, FlashF32Acc: f32})
}

// adoptPacked takes memory for the repacked weights and the function that
// releases it, which closePacked calls.
func (p *Plan) adoptPacked(buf []byte, free func() error, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	prev := p.unmapPacked
	p.unmapPacked = func() error {
		err := free()
		if prev != nil {
			err = errors.Join(err, prev())
		}
		return err
	}
	return buf, nil
}

// checkCtx refuses a session context on the other side of the plan's
// LongRoPE switch: llama.cpp would read the other set of RoPE factors,
// which the plan's graph does not.
func checkCtx(p model.Params, ctx int) error {
	if p.LongRoPECtx == 0 || (ctx > p.LongRoPECtx) == p.LongRoPE {
		return nil
	}
	if p.LongRoPE {
		return fmt.Errorf("context of %d tokens: this plan was compiled for contexts above %d (LongRoPE's long factors); use a --ctx above %d, or recompile with --ctx %d for LongRoPE's short factors",
			ctx, p.LongRoPECtx, p.LongRoPECtx, ctx)
	}
	return fmt.Errorf("context of %d tokens: this plan was compiled for contexts up to %d (LongRoPE's short factors); use --ctx %d or less, or recompile with --ctx %d for its long factors",
		ctx, p.LongRoPECtx, p.LongRoPECtx, ctx)
}

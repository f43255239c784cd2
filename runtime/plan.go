package runtime

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/cpu"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/model"
	"github.com/weft-ml/weft/passes"
)

// PlanFormat and PlanVersion identify plan files this build can read.
const (
	PlanFormat  = "weft-plan"
	PlanVersion = 2 // 2: the repacked side file is fingerprinted
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

	// PackedFile names the side file (beside the plan) holding weights
	// repacked at compile time, PackedSum fingerprints it (see
	// packedSum); Packed holds its bytes.
	PackedFile string `json:"packed_file,omitempty"`
	PackedSum  string `json:"packed_sum,omitempty"`
	Packed     []byte `json:"-"`

	unmapPacked func() error // set when Packed is a mapping of its own
}

// releasingFile lets the weight-layout pass drop the mapped pages of each
// tensor it repacks, so the repacked copy replaces them in memory.
type releasingFile struct{ *gguf.File }

func (f releasingFile) ReleaseTensorData(t *gguf.TensorInfo) { dropPages(f.TensorData(t)) }

// ModelRef names the weights file and fingerprints it, so a plan is never
// run against a different file.
type ModelRef struct {
	Path        string `json:"path"`        // as given to the compiler
	AbsPath     string `json:"abs_path"`    // absolute path at compile time
	Size        int64  `json:"size"`        // file size in bytes
	Fingerprint string `json:"fingerprint"` // sha256 of the header and tensor table
}

// RunParams are the run-time defaults chosen at compile time.
type RunParams struct {
	Ctx    int    `json:"ctx"`     // KV cache positions
	Batch  int    `json:"batch"`   // largest prefill batch
	KVType string `json:"kv_type"` // "f16" or "f32"
}

// PassLogEntry records what one optimisation pass changed.
type PassLogEntry = passes.LogEntry

// Fingerprint hashes the header and tensor table of f (everything before
// the data section) together with the file size.
func Fingerprint(path string, f *gguf.File) (string, error) {
	fh, err := os.Open(path)
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
	Ctx    int    // 0: min(2048, the model's training context)
	Batch  int    // 0: 512
	KVType string // "": f16

	Passes    []string // run only these passes, in this order (empty: all)
	Disable   []string // passes to leave out
	O0        bool     // no optimisation: placement only
	DumpAfter []string // pass names, or "all": call Dump after them
	Dump      func(pass string, g *graph.Graph) error

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
	p := &Plan{
		Format: PlanFormat, Version: PlanVersion,
		Model:  ModelRef{Path: path, AbsPath: abs, Size: f.Size(), Fingerprint: fp},
		Params: l.Params, Run: run, Graph: l.Graph, Lowered: len(l.Graph.Nodes),
	}
	if err := p.optimise(f, o); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// optimise runs the selected passes for the CPU backend.
func (p *Plan) optimise(f *gguf.File, o CompileOptions) error {
	cfg := passes.Config{Backends: []backends.Backend{cpu.Backend{}}, Tokens: p.Run.Batch, Weights: releasingFile{f}, Packed: &p.Packed}
	if o.packedMem != nil {
		cfg.Alloc = func(size int) ([]byte, error) { return p.adoptPacked(o.packedMem(size)) }
	}
	list, err := passes.Select(cfg, o.Passes, o.Disable, o.O0)
	if err != nil {
		return err
	}
	pl := passes.Pipeline{Passes: list, DumpAfter: o.DumpAfter, Dump: o.Dump}
	p.Passes, err = pl.Run(p.Graph)
	return err
}

func (o CompileOptions) resolve(p model.Params) (RunParams, error) {
	r := RunParams{Ctx: o.Ctx, Batch: o.Batch, KVType: o.KVType}
	if r.Ctx == 0 {
		r.Ctx = min(2048, p.CtxTrain)
	}
	if r.Batch == 0 {
		r.Batch = 512
	}
	if r.KVType == "" {
		r.KVType = "f16"
	}
	if r.Ctx < 1 || r.Batch < 1 {
		return r, fmt.Errorf("context %d and batch %d must be positive", r.Ctx, r.Batch)
	}
	if r.KVType != "f16" && r.KVType != "f32" {
		return r, fmt.Errorf("KV cache type %q: want f16 or f32", r.KVType)
	}
	return r, nil
}

// WritePlan writes p to path atomically (temp file, then rename).
func WritePlan(path string, p *Plan) error {
	if len(p.Packed) > 0 {
		p.PackedFile, p.PackedSum = filepath.Base(path)+".packed", packedSum(p.Packed)
		if err := writeAtomic(filepath.Join(filepath.Dir(path), p.PackedFile), p.Packed); err != nil {
			return err
		}
	}
	return writePlanJSON(path, p)
}

// writePlanJSON writes the plan file itself, atomically.
func writePlanJSON(path string, p *Plan) error {
	data, err := json.MarshalIndent(p, "", " ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(data, '\n'))
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadPlan reads and checks a plan file.
func ReadPlan(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil || head.Format != PlanFormat {
		return nil, fmt.Errorf("%s: not a weft plan file", path)
	}
	if head.Version != PlanVersion {
		return nil, fmt.Errorf("%s: plan version %d, this build reads version %d: recompile with graphc compile", path, head.Version, PlanVersion)
	}
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if p.Graph == nil {
		return nil, fmt.Errorf("%s: plan has no graph", path)
	}
	if err := p.Graph.Verify(); err != nil {
		return nil, fmt.Errorf("%s: invalid graph: %w", path, err)
	}
	if p.PackedFile != "" {
		side := filepath.Join(filepath.Dir(path), filepath.Base(p.PackedFile))
		if p.Packed, p.unmapPacked, err = mapReadOnly(side); err != nil {
			return nil, fmt.Errorf("%s: repacked weights: %w", path, err)
		}
		if sum := packedSum(p.Packed); sum != p.PackedSum {
			p.closePacked()
			return nil, fmt.Errorf("%s: repacked weights %s do not belong to this plan (fingerprint %s, plan expects %s): recompile with graphc compile", path, side, sum, p.PackedSum)
		}
	}
	return &p, nil
}

// packedSum fingerprints repacked weights cheaply enough for every load:
// FNV-1a over the length and 256 bytes at every MiB boundary and at the
// end. It catches a side file from another compile (other weights, other
// layouts or sizes) without reading 600 MB; it is not a guard against
// deliberate tampering.
func packedSum(b []byte) string {
	const stride, sample = 1 << 20, 256
	h := fnv.New64a()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	for off := 0; off < len(b); off += stride {
		h.Write(b[off:min(off+sample, len(b))])
	}
	h.Write(b[max(0, len(b)-sample):])
	return fmt.Sprintf("fnv64a:%016x", h.Sum64())
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

// CompileTo compiles the model at in and writes the plan to out, with the
// repacked weights written straight into the mapped side file rather than
// built in memory and copied: for a 1.1B model that is 600 MB less to
// allocate, touch and copy. The returned plan's Packed maps the side file.
func CompileTo(in, out string, o CompileOptions) (*Plan, error) {
	side := out + ".packed"
	tmp := side + ".tmp"
	var release func() error // the mapping, should Compile fail after making it
	o.packedMem = func(size int) ([]byte, func() error, error) {
		b, free, err := mapNewFile(tmp, size)
		release = free
		return b, free, err
	}
	p, err := Compile(in, o)
	if err != nil {
		if release != nil {
			release()
		}
		os.Remove(tmp)
		return nil, err
	}
	if len(p.Packed) == 0 {
		p.closePacked()
		os.Remove(tmp)
		return p, writePlanJSON(out, p)
	}
	used := len(p.Packed)
	p.PackedFile, p.PackedSum = filepath.Base(side), packedSum(p.Packed)
	err = p.closePacked()
	if err == nil {
		err = os.Truncate(tmp, int64(used))
	}
	if err == nil {
		err = os.Rename(tmp, side)
	}
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	if p.Packed, p.unmapPacked, err = mapReadOnly(side); err != nil {
		return nil, err
	}
	return p, writePlanJSON(out, p)
}

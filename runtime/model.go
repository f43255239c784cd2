package runtime

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/hugepage"
	"github.com/weft-ml/weft/internal/safemath"
	"github.com/weft-ml/weft/model/tokenizer"
	"github.com/weft-ml/weft/ops"
)

// Options configure Open.
type Options struct {
	Backend string // registered backend that runs the plan ("": cpu; "auto": the first that loads)
	Device  int    // which device of that backend
	Threads int    // 0: all cores
	// LoadProgress, when set, hears how many weight bytes a GPU backend
	// has uploaded (for a progress line).
	LoadProgress func(done, total int64)
	Compile      CompileOptions // used when opening a .gguf directly
	// Taps chooses the nodes whose values sessions with a
	// SessionOptions.Tap see (see MatchNodes; "": none). On a GPU backend
	// their values are copied to the host after every step, which slows
	// it; the CPU computes them on the host anyway.
	Taps string
	// F16AsBF16 converts the F16 matmul weights (and a tied F16 table) to
	// BF16 at load, on the CPU backend only, so that its BF16 kernels run
	// (like ik_llama.cpp's -rtr): faster where the CPU has AVX-512, and
	// different logits (bf16 keeps 8 significant bits to f16's 11; see
	// docs/decisions.md for the measured deviation). Model.ConvertedBF16
	// says how many weights it converted.
	F16AsBF16 bool
}

// Model is a loaded plan with its mapped weights, tokenizer and compiled
// program. It is safe for concurrent use by many Sessions, and Close may
// be called while they run (see Close).
type Model struct {
	Plan      *Plan
	File      *gguf.File
	Tokenizer *tokenizer.Tokenizer
	LoadTime  time.Duration
	// Backend runs the model; BackendNotes say why preferred backends
	// were passed over (Options.Backend "auto").
	Backend      string
	BackendNotes []string
	// Device is the device Backend runs on, where it has one of its own
	// (a GPU); the zero DeviceInfo on the host.
	Device backends.DeviceInfo
	// ConvertedBF16 and ConvertedBF16Bytes count the F16 weights that
	// Options.F16AsBF16 converted to BF16, and their bytes.
	ConvertedBF16      int
	ConvertedBF16Bytes int64

	prog backends.Program
	taps *tapPlan // Options.Taps: what sessions may tap (tap.go)
	// life guards the weights: every batch holds a read lock while its
	// kernels run (one atomic add each way; sessions do not contend), and
	// Close takes the write lock, so it waits for running batches and
	// keeps new ones out until closed is set.
	life   sync.RWMutex
	closed bool // under life

	sessMu   sync.Mutex            // guards sessions
	sessions map[*Session]struct{} // live sessions, released by Close (release.go)
}

// Open loads a .plan file, or compiles a .gguf file in memory.
func Open(path string, o Options) (*Model, error) {
	start := time.Now()
	if err := o.checkBF16(); err != nil {
		return nil, err
	}
	plan, weights, err := loadPlan(path, o)
	if err != nil {
		return nil, err
	}
	f, err := gguf.Open(weights)
	if err != nil {
		plan.closePacked()
		return nil, err
	}
	m, err := build(plan, f, weights, o)
	if err != nil {
		f.Close()
		plan.closePacked()
		return nil, err
	}
	m.LoadTime = time.Since(start)
	return m, nil
}

func loadPlan(path string, o Options) (*Plan, string, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, "", err
	}
	if strings.HasSuffix(strings.ToLower(path), ".gguf") {
		co := o.Compile
		co.packedMem = hugepage.Alloc
		p, err := Compile(path, co)
		return p, path, err
	}
	p, err := ReadPlan(path)
	if err != nil {
		return nil, "", err
	}
	weights, err := p.locateWeights(path)
	return p, weights, err
}

func build(plan *Plan, f *gguf.File, weights string, o Options) (*Model, error) {
	fp, err := Fingerprint(weights, f)
	if err != nil {
		return nil, err
	}
	if fp != plan.Model.Fingerprint || f.Size() != plan.Model.Size {
		return nil, fmt.Errorf("%s has changed since the plan was compiled (fingerprint mismatch): recompile with graphc compile", weights)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("%s: tokenizer: %w", weights, err)
	}
	// The plan is checked before anything is sized for it (validate.go):
	// its fields here, its graph against the kernels and the weights in
	// the backend's Load.
	if err := plan.validate(); err != nil {
		return nil, planError(plan, weights, err)
	}
	names, err := o.candidates(plan)
	if err != nil {
		return nil, err
	}
	var w backends.Weights = f
	if o.F16AsBF16 {
		w = releasingFile{f} // a converted weight's F16 pages are not read again
	}
	var notes []string
	for i, name := range names {
		lo := backends.LoadOptions{MaxTokens: plan.Run.Batch, Threads: o.Threads, Packed: plan.Packed,
			ModelFile: weights, PackedFile: plan.sidePath, Device: o.Device, CacheFile: plan.cacheFile(name), Progress: o.LoadProgress,
			F16AsBF16: o.F16AsBF16}
		g, taps, err := plan.tapGraph(name, o.Taps)
		var prog backends.Program
		if err == nil {
			prog, err = load(plan, g, name, w, lo)
		}
		if err == nil {
			m := &Model{Plan: plan, File: f, Tokenizer: tok, Backend: name, BackendNotes: append(notes, splitNotes(plan)...), prog: prog, taps: taps}
			if d, ok := prog.(backends.DeviceDescriber); ok {
				m.Device = d.DeviceInfo()
			}
			if c, ok := prog.(bf16Counter); ok {
				m.ConvertedBF16, m.ConvertedBF16Bytes = c.BF16Weights()
			}
			if o.F16AsBF16 {
				m.BackendNotes = append(m.BackendNotes, bf16Note(m.ConvertedBF16, m.ConvertedBF16Bytes))
			}
			return m, nil
		}
		if o.Backend != AutoBackend || i == len(names)-1 {
			return nil, loadError(plan, weights, name, err)
		}
		notes = append(notes, fmt.Sprintf("backend %s not used (%v): falling back to %s", name, err, names[i+1]))
	}
	return nil, errors.New("no backend to run on")
}

// load loads the plan on backend name; a plan whose nodes are placed on
// several backends (an op the device cannot run went to the CPU) loads on
// each of them, run split by split (backends.LoadSplits).
// g is the plan's graph, or the copy of it that taps values (tapGraph).
func load(plan *Plan, g *graph.Graph, name string, f backends.Weights, o backends.LoadOptions) (backends.Program, error) {
	if len(backends.SplitBackends(g)) > 1 && name == plan.DeviceBackend() {
		return backends.LoadSplits(g, f, o)
	}
	exec, err := backends.Lookup(name)
	if err != nil {
		return nil, err
	}
	return exec.Load(g, f, o)
}

// bf16Note says what Options.F16AsBF16 converted; a model without F16
// matmul weights runs unchanged.
func bf16Note(n int, bytes int64) string {
	if n == 0 {
		return "--f16-as-bf16: the model has no F16 matmul weights: nothing converted"
	}
	return fmt.Sprintf("--f16-as-bf16: %d F16 weights (%s) converted to BF16 at load", n, safemath.Bytes(bytes))
}

// bf16Counter is the CPU program's report of Options.F16AsBF16's work.
type bf16Counter interface{ BF16Weights() (int, int64) }

// checkBF16 refuses Options.F16AsBF16 off the CPU backend (the only one
// with the conversion), "auto" included: a model would otherwise run one
// way or the other depending on the machine. A plan placed for a device
// backend is refused before this (candidates).
func (o Options) checkBF16() error {
	if b := o.backend(); o.F16AsBF16 && b != hostBackend {
		return fmt.Errorf("--f16-as-bf16 converts weights for the CPU backend's BF16 kernels; the %s backend computes F16 weights as F16: leave out --f16-as-bf16, or run with --backend cpu", b)
	}
	return nil
}

// splitNotes says which nodes of a plan placed on several backends run
// off its device backend, and why.
func splitNotes(plan *Plan) []string {
	g := plan.Graph
	if len(backends.SplitBackends(g)) < 2 {
		return nil
	}
	dev := plan.DeviceBackend()
	var off []string
	for _, sp := range g.Splits {
		if sp.Backend == dev {
			continue
		}
		for _, id := range sp.Nodes {
			if n := g.Nodes[id]; n.Op != ops.Copy && len(off) < 3 {
				off = append(off, fmt.Sprintf("%s %q (%s)", n.Op, n.Name, n.Cause))
			}
		}
	}
	return []string{fmt.Sprintf("the plan runs in %d splits on %s; off %s, e.g. %s", len(g.Splits), strings.Join(backends.SplitBackends(g), " and "), dev, strings.Join(off, "; "))}
}

// loadError explains a failed Load: the host backend checks the plan's
// graph, so its refusals are the plan's; another backend's are its own
// (no device, not enough memory).
func loadError(plan *Plan, weights, backend string, err error) error {
	var opt interface{ CallerOption() } // an Options value out of range (cpu.OptionError)
	switch {
	case errors.Is(err, backends.ErrWeightsChanged), errors.As(err, &opt):
		return err
	case backend == hostBackend:
		return planError(plan, weights, err)
	}
	return fmt.Errorf("backend %s: %w", backend, err)
}

// planError names the plan (or model) a refusal is about.
func planError(plan *Plan, weights string, err error) error {
	if plan.path != "" {
		return fmt.Errorf("plan file %s: %w: %s", plan.path, err, recompile)
	}
	return fmt.Errorf("%s: %w", weights, err)
}

// Close releases the weights mappings. It waits for batches that are
// running in any session (at most one batch each: generation and
// evaluation stop between batches) and then releases the weights; from
// then on NewSession and the evaluating Session methods return ErrClosed,
// and a Generate in progress returns ErrClosed with what it made.
// Calling Close again does nothing and returns nil.
func (m *Model) Close() error {
	m.life.Lock()
	defer m.life.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	err := m.releaseAll()
	if ferr := m.File.Close(); err == nil {
		err = ferr
	}
	if perr := m.Plan.closePacked(); err == nil {
		err = perr
	}
	return err
}

// isClosed reports whether Close has run.
func (m *Model) isClosed() bool {
	m.life.RLock()
	defer m.life.RUnlock()
	return m.closed
}

// Close releases the memory or mapping of a plan's repacked weights (a
// Model's plan is closed with the Model).
func (p *Plan) Close() error { return p.closePacked() }

// closePacked unmaps the repacked weights if they were mapped.
func (p *Plan) closePacked() error {
	p.check.halt()
	u := p.unmapPacked
	if u == nil {
		return nil
	}
	p.unmapPacked, p.Packed = nil, nil
	return u()
}

// VocabSize is the width of a logits row.
func (m *Model) VocabSize() int { return m.Plan.Params.VocabSize }

// ActivationBytes is the activation memory of one session.
func (m *Model) ActivationBytes() int64 { return m.prog.ActivationBytes() }

// AutoBackend asks Open for the first backend that loads the plan, in
// the order of autoOrder, falling back to the host.
const AutoBackend = "auto"

// autoOrder is the preference of AutoBackend.
var autoOrder = []string{"vulkan", hostBackend}

// candidates are the backends to try, in order, for plan: a plan placed
// for a device backend runs only there (its graph holds that backend's
// copies and layouts); a plan for the host alone runs anywhere.
func (o Options) candidates(plan *Plan) ([]string, error) {
	placed := plan.DeviceBackend()
	switch {
	case placed != "" && o.Backend == AutoBackend:
		return []string{placed}, nil
	case placed != "" && o.backend() != placed:
		return nil, fmt.Errorf("this plan was compiled for the %s backend (graphc compile --backend %s): run it with --backend %s, or recompile it with --backend %s", placed, placed, placed, o.backend())
	case o.Backend == AutoBackend:
		return autoOrder, nil
	}
	return []string{o.backend()}, nil
}

// cacheFile is where backend may keep its compiled kernels for this plan:
// beside the plan file (PLAN.BACKEND.cache); none for a model compiled in
// memory, whose folder is the user's.
func (p *Plan) cacheFile(backend string) string {
	if p.path == "" {
		return ""
	}
	return p.path + "." + backend + ".cache"
}

// DeviceBackend is the backend other than the host that the plan's nodes
// are placed on, or "".
func (p *Plan) DeviceBackend() string {
	for _, n := range p.Graph.Nodes {
		if n.Backend != "" && n.Backend != hostBackend {
			return n.Backend
		}
	}
	return ""
}

// backend is the backend to run on.
func (o Options) backend() string {
	if o.Backend == "" {
		return hostBackend
	}
	return o.Backend
}

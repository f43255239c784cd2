package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// ProfileFormat and ProfileVersion identify a Profile written as JSON
// (graphrun bench --profile-out, read by graphc dump --profile).
const (
	ProfileFormat  = "weft-profile"
	ProfileVersion = 1
)

// Profile is the time each node of a plan's graph took, measured by a
// Session (StartProfile) or by Bench (BenchOptions.Profile): GPU time
// between timestamp queries on Vulkan, wall time around each node's
// kernel on the CPU. Nodes are the plan's graph after all passes (the
// graph graphc dump draws), named by ID, name and op, so a dump of the
// same plan, or of the model compiled with Compile's settings, matches
// them (Phase.Match).
type Profile struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	Model   string `json:"model"`   // the plan's model file (base name)
	Backend string `json:"backend"` // the backend that ran it (Model.Backend)
	// Compile is the plan's settings: compiling the model with them
	// (graphc dump --profile does) gives the graph the IDs name.
	Compile    ProfileCompile `json:"compile"`
	GraphNodes int            `json:"graph_nodes"` // nodes in the plan's graph
	KVType     string         `json:"kv_type"`     // the session's KV cache
	Phases     []ProfilePhase `json:"phases"`
}

// ProfileCompile is what a plan was compiled with.
type ProfileCompile struct {
	Backend   string `json:"backend"` // the device backend nodes were placed on ("" or "cpu": the CPU)
	Batch     int    `json:"batch"`
	Ctx       int    `json:"ctx"`
	KVType    string `json:"kv_type"`
	FlashAttn bool   `json:"flash_attn,omitempty"`
}

// ProfilePhase is the profile of the steps of one batch size: decode (one
// token a step) or a prefill batch. Times are per step; per token is per
// step divided by Tokens. Bytes and FLOPs are estimates from the graph:
// the bytes a node must read and write once (weights, activations, the
// KV cells attention reads and the new ones it stores) and the matmuls'
// and attention's multiply-adds ×2; the rates divide them by the
// measured time.
type ProfilePhase struct {
	Name   string `json:"name"`   // "decode" or "prefill N"
	Tokens int    `json:"tokens"` // per step
	Steps  int    `json:"steps"`
	Clock  string `json:"clock"` // "gpu" (timestamp queries), "wall" (CPU), "mixed"
	// KVCells is the mean KV cache length at the end of a step, which
	// the attention bytes and FLOPs assume.
	KVCells    float64 `json:"kv_cells"`
	US         float64 `json:"us_per_step"` // the nodes' time summed
	USPerToken float64 `json:"us_per_token"`
	// Per step: 0 on the CPU.
	Dispatches float64        `json:"dispatches_per_step,omitempty"`
	Barriers   float64        `json:"barriers_per_step,omitempty"`
	Submits    float64        `json:"submits_per_step,omitempty"`
	Bytes      int64          `json:"bytes"` // per step, all nodes
	FLOPs      int64          `json:"flops"`
	GBs        float64        `json:"gb_s"`
	TFLOPs     float64        `json:"tflop_s"`
	Nodes      []ProfileNode  `json:"nodes"` // most time first
	Kinds      []ProfileKind  `json:"kinds"` // most time first
	Untimed    []ProfileNoted `json:"untimed,omitempty"`
}

// ProfileNode is one node's time per step.
type ProfileNode struct {
	ID      int     `json:"id"`
	Name    string  `json:"name"`
	Op      string  `json:"op"`
	Kind    string  `json:"kind"` // the op, matmuls with the weight's type and shape
	Backend string  `json:"backend"`
	US      float64 `json:"us_per_step"`
	Share   float64 `json:"share"`         // of the phase's time, 0 to 1
	Runs    float64 `json:"runs_per_step"` // 1, or 0.5 when a node ran in half the steps
	Bytes   int64   `json:"bytes"`
	FLOPs   int64   `json:"flops,omitempty"`
	GBs     float64 `json:"gb_s"`
	TFLOPs  float64 `json:"tflop_s,omitempty"`
	// Parts are a node's separately timed dispatches when it has more
	// than one (a matmul's activation quantization, an attention's KV
	// store).
	Parts []ProfilePart `json:"parts,omitempty"`
}

// ProfilePart is one timed part of a node.
type ProfilePart struct {
	Label string  `json:"label"`
	US    float64 `json:"us_per_step"`
}

// ProfileKind sums the nodes of one kind.
type ProfileKind struct {
	Kind   string  `json:"kind"`
	Nodes  int     `json:"nodes"`
	US     float64 `json:"us_per_step"`
	Share  float64 `json:"share"`
	Bytes  int64   `json:"bytes"`
	FLOPs  int64   `json:"flops,omitempty"`
	GBs    float64 `json:"gb_s"`
	TFLOPs float64 `json:"tflop_s,omitempty"`
}

// ProfileNoted is a computed node with no time of its own, and why.
type ProfileNoted struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	Op   string `json:"op"`
}

// sessionProfile is what a profiled Session adds to the backend's
// profile: the KV cache lengths of its steps, by batch size.
type sessionProfile struct {
	cells map[int]float64 // summed cache length at the end of each step
	steps map[int]int
}

func (p *sessionProfile) note(tokens, end int) {
	p.cells[tokens] += float64(end)
	p.steps[tokens]++
}

// StartProfile times every node of every later Eval or Step (see
// Profile) and clears what was measured before. The backend must time
// nodes (backends.Profiler: the CPU and Vulkan backends do).
func (s *Session) StartProfile() error {
	if err := s.claim(); err != nil {
		return err
	}
	defer s.unclaim()
	p, ok := s.st.(backends.Profiler)
	if !ok {
		return fmt.Errorf("the %s backend does not time nodes", s.m.Backend)
	}
	if err := p.StartProfile(); err != nil {
		return err
	}
	s.prof = &sessionProfile{cells: map[int]float64{}, steps: map[int]int{}}
	return nil
}

// Profile returns the node times measured since StartProfile, one phase
// per batch size (decode first), or an error when StartProfile was not
// called.
func (s *Session) Profile() (*Profile, error) {
	if err := s.claim(); err != nil {
		return nil, err
	}
	defer s.unclaim()
	p, ok := s.st.(backends.Profiler)
	if !ok || s.prof == nil {
		return nil, errors.New("the session was not profiled: call StartProfile first")
	}
	return s.m.newProfile(p.Profile(), s.prof, s.kvType), nil
}

// newProfile builds the report of a backend's raw profile.
func (m *Model) newProfile(raw []backends.StepProfile, sp *sessionProfile, kv backends.KVType) *Profile {
	plan := m.Plan
	out := &Profile{Format: ProfileFormat, Version: ProfileVersion, Model: filepath.Base(plan.Model.Path), Backend: m.Backend,
		Compile:    ProfileCompile{Backend: plan.DeviceBackend(), Batch: plan.Run.Batch, Ctx: plan.Run.Ctx, KVType: plan.Run.KVType, FlashAttn: plan.Run.FlashAttn},
		GraphNodes: len(plan.Graph.Nodes), KVType: kv.String()}
	for _, r := range raw {
		cells := 0.0
		if sp != nil && sp.steps[r.Tokens] > 0 {
			cells = sp.cells[r.Tokens] / float64(sp.steps[r.Tokens])
		}
		out.Phases = append(out.Phases, buildPhase(plan.Graph, r, cells, kv))
	}
	sort.SliceStable(out.Phases, func(i, j int) bool { return out.Phases[i].Tokens < out.Phases[j].Tokens })
	return out
}

func buildPhase(g *graph.Graph, r backends.StepProfile, cells float64, kv backends.KVType) ProfilePhase {
	steps := float64(max(r.Steps, 1))
	ph := ProfilePhase{Name: phaseName(r.Tokens), Tokens: r.Tokens, Steps: r.Steps, Clock: r.Clock, KVCells: cells,
		Dispatches: float64(r.Dispatches) / steps, Barriers: float64(r.Barriers) / steps, Submits: float64(r.Submits) / steps}
	byNode := map[int]*ProfileNode{}
	var order []int
	for _, sp := range r.Spans {
		n := g.Node(sp.Node)
		if n == nil {
			continue // a span of no node (none today): left out
		}
		pn := byNode[n.ID]
		if pn == nil {
			pn = &ProfileNode{ID: n.ID, Name: n.Name, Op: n.Op, Kind: backends.ProfileLabel(g, n), Backend: n.Backend}
			pn.Bytes, pn.FLOPs = nodeCost(g, n, r.Tokens, cells, kv)
			byNode[n.ID] = pn
			order = append(order, n.ID)
		}
		us := float64(sp.Time) / float64(time.Microsecond) / steps
		pn.US += us
		if sp.Label == pn.Kind {
			pn.Runs = max(pn.Runs, float64(sp.Count)/steps)
		}
		pn.Parts = append(pn.Parts, ProfilePart{Label: sp.Label, US: us})
		ph.US += us
	}
	kinds := map[string]*ProfileKind{}
	for _, id := range order {
		pn := byNode[id]
		if len(pn.Parts) == 1 {
			pn.Parts = nil
		}
		if pn.Runs == 0 {
			pn.Runs = 1
		}
		pn.Share = ratio(pn.US, ph.US)
		pn.GBs, pn.TFLOPs = rates(pn.Bytes, pn.FLOPs, pn.US)
		ph.Nodes = append(ph.Nodes, *pn)
		ph.Bytes += pn.Bytes
		ph.FLOPs += pn.FLOPs
		k := kinds[pn.Kind]
		if k == nil {
			k = &ProfileKind{Kind: pn.Kind}
			kinds[pn.Kind] = k
		}
		k.Nodes++
		k.US += pn.US
		k.Bytes += pn.Bytes
		k.FLOPs += pn.FLOPs
	}
	for _, k := range kinds {
		k.Share = ratio(k.US, ph.US)
		k.GBs, k.TFLOPs = rates(k.Bytes, k.FLOPs, k.US)
		ph.Kinds = append(ph.Kinds, *k)
	}
	sort.SliceStable(ph.Nodes, func(i, j int) bool { return ph.Nodes[i].US > ph.Nodes[j].US })
	sort.Slice(ph.Kinds, func(i, j int) bool {
		if ph.Kinds[i].US != ph.Kinds[j].US {
			return ph.Kinds[i].US > ph.Kinds[j].US
		}
		return ph.Kinds[i].Kind < ph.Kinds[j].Kind
	})
	ph.USPerToken = ph.US / float64(max(r.Tokens, 1))
	ph.GBs, ph.TFLOPs = rates(ph.Bytes, ph.FLOPs, ph.US)
	for _, n := range g.Nodes {
		if _, ok := byNode[n.ID]; !ok && n.Op != "Input" && n.Op != "Weight" {
			ph.Untimed = append(ph.Untimed, ProfileNoted{ID: n.ID, Name: n.Name, Op: n.Op})
		}
	}
	return ph
}

func phaseName(tokens int) string {
	if tokens == 1 {
		return "decode"
	}
	return fmt.Sprintf("prefill %d", tokens)
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// rates are bytes and FLOPs over us microseconds in GB/s and TFLOP/s.
func rates(bytes, flops int64, us float64) (gbs, tflops float64) {
	if us <= 0 {
		return 0, 0
	}
	return float64(bytes) / us / 1e3, float64(flops) / us / 1e6
}

// nodeCost estimates the bytes node n reads and writes once, and its
// FLOPs, in a step of T tokens with one output row (R = 1: the logits of
// the last token, as Eval without all asks) and a KV cache of cells
// positions at its end.
func nodeCost(g *graph.Graph, n *graph.Node, T int, cells float64, kv backends.KVType) (bytes, flops int64) {
	env := map[string]int64{"T": int64(T), "R": 1}
	size := func(t graph.Type, rows int64) int64 {
		elems, err := t.Shape.Bind(env)
		if err != nil || elems <= 0 {
			return 0
		}
		if rows >= 0 && len(t.Shape) > 0 {
			elems = rows * t.Shape.PerRow()
		}
		bs, bb := int64(t.DType.BlockSize()), int64(t.DType.BlockBytes())
		if bs == 0 {
			return 4 * elems
		}
		return elems / bs * bb
	}
	bytes = size(n.Type, -1)
	seen := map[int]bool{}
	for i, in := range n.Inputs {
		if seen[in] {
			continue
		}
		seen[in] = true
		src := g.Nodes[in]
		rows := int64(-1)
		if n.Op == ops.GetRows && i == 0 && src.Op == "Weight" {
			rows = int64(T) // an embedding lookup reads T rows of the table
		}
		bytes += size(src.Type, rows)
	}
	for _, w := range ops.MatMulWeights(n) {
		sh := g.Nodes[w].Type.Shape
		x := g.Nodes[n.Inputs[0]].Type
		if len(sh) != 2 || len(x.Shape) == 0 {
			continue
		}
		toks, err := graph.Shape{x.Shape[0]}.Bind(env)
		if err != nil {
			continue
		}
		flops += 2 * toks * sh[0].N * sh[1].N
	}
	if n.Op == ops.Attention && cells > 0 {
		a := n.Attrs
		heads, kvHeads, hd := int64(a.Int("heads")), int64(a.Int("kv_heads")), int64(a.Int("head_dim"))
		// Cells attended: the last token sees all, the first T-1 fewer.
		seen := float64(T)*cells - float64(T)*float64(T-1)/2
		if w := float64(a.Int("window")); w > 0 {
			seen = min(seen, float64(T)*w)
		}
		flops += int64(4 * float64(heads*hd) * seen)
		read := cells
		if w := float64(a.Int("window")); w > 0 {
			read = min(read, w+float64(T)-1)
		}
		bytes += int64(2 * read * float64(kvRowBytes(kv, kvHeads*hd)))
	}
	return bytes, flops
}

// kvRowBytes is the bytes of one KV cell of width values.
func kvRowBytes(kv backends.KVType, width int64) int64 {
	switch kv {
	case backends.KVF32:
		return 4 * width
	case backends.KVQ8_0:
		return width / 32 * 34
	case backends.KVQ4_0:
		return width / 32 * 18
	}
	return 2 * width
}

// Match finds the node of g each of the phase's nodes names: the node
// with its ID when that has its name and op, else the one node with its
// name and op. It returns them by g's node IDs, and the profile's nodes
// it found no node for.
func (ph *ProfilePhase) Match(g *graph.Graph) (map[int]*ProfileNode, []ProfileNode) {
	type key struct{ name, op string }
	byName := map[key][]int{}
	for _, n := range g.Nodes {
		byName[key{n.Name, n.Op}] = append(byName[key{n.Name, n.Op}], n.ID)
	}
	found := map[int]*ProfileNode{}
	var missing []ProfileNode
	for i := range ph.Nodes {
		pn := &ph.Nodes[i]
		if n := g.Node(pn.ID); n != nil && n.Name == pn.Name && n.Op == pn.Op && found[n.ID] == nil {
			found[n.ID] = pn
			continue
		}
		if ids := byName[key{pn.Name, pn.Op}]; len(ids) == 1 && found[ids[0]] == nil {
			found[ids[0]] = pn
			continue
		}
		missing = append(missing, *pn)
	}
	return found, missing
}

// Phase returns the phase called name ("decode", "prefill 512"), or
// when name is "" decode if there is one, else the first.
func (p *Profile) Phase(name string) (*ProfilePhase, error) {
	if len(p.Phases) == 0 {
		return nil, errors.New("the profile has no phases (no step was timed)")
	}
	if name == "" {
		if i := slices.IndexFunc(p.Phases, func(ph ProfilePhase) bool { return ph.Tokens == 1 }); i >= 0 {
			return &p.Phases[i], nil
		}
		return &p.Phases[0], nil
	}
	var names []string
	for i := range p.Phases {
		if p.Phases[i].Name == name {
			return &p.Phases[i], nil
		}
		names = append(names, fmt.Sprintf("%q", p.Phases[i].Name))
	}
	return nil, fmt.Errorf("the profile has no phase %q (it has %s)", name, strings.Join(names, ", "))
}

// WriteJSON writes the profile as indented JSON.
func (p *Profile) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(p)
}

// DecodeProfile reads a profile written by WriteJSON, checking its
// format and version.
func DecodeProfile(r io.Reader) (*Profile, error) {
	var p Profile
	dec := json.NewDecoder(r)
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("not a weft profile: %w", err)
	}
	if p.Format != ProfileFormat {
		return nil, fmt.Errorf("not a weft profile (format %q, want %q: write one with graphrun bench --profile-out)", p.Format, ProfileFormat)
	}
	if p.Version != ProfileVersion {
		return nil, fmt.Errorf("profile version %d: this build reads version %d", p.Version, ProfileVersion)
	}
	return &p, nil
}

// ReadProfile reads a profile file (DecodeProfile).
func ReadProfile(path string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := DecodeProfile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// WriteText prints each phase: its time per step and per token, the
// dispatches, barriers and submits per step, the time by kind and the
// top nodes (all of them when top <= 0).
func (p *Profile) WriteText(w io.Writer, top int) error {
	var b strings.Builder
	for _, ph := range p.Phases {
		clock := map[string]string{"gpu": "GPU time (timestamp queries)", "wall": "wall time"}[ph.Clock]
		if clock == "" {
			clock = ph.Clock + " time"
		}
		fmt.Fprintf(&b, "profile %s (%s on %s): %d steps of %d token(s), %.1f µs per step, %.1f µs per token, %s\n",
			ph.Name, p.Model, p.Backend, ph.Steps, ph.Tokens, ph.US, ph.USPerToken, clock)
		if ph.Dispatches > 0 {
			per := "step"
			if ph.Tokens == 1 {
				per = "token"
			}
			fmt.Fprintf(&b, "  per %s: %.0f dispatches, %.0f barriers, %.0f submits\n", per, ph.Dispatches, ph.Barriers, ph.Submits)
		}
		fmt.Fprintf(&b, "  all nodes: %.1f MB, %s GB/s, %s TFLOP/s (KV cache %.0f cells)\n", float64(ph.Bytes)/1e6, num(ph.GBs), num(ph.TFLOPs), ph.KVCells)
		fmt.Fprintf(&b, "  %-32s %5s %10s %6s %9s %8s\n", "by kind", "nodes", "µs/step", "share", "GB/s", "TFLOP/s")
		for _, k := range ph.Kinds {
			fmt.Fprintf(&b, "  %-32s %5d %10.1f %5.1f%% %9s %8s\n", clipText(k.Kind, 32), k.Nodes, k.US, 100*k.Share, num(k.GBs), tflops(k.TFLOPs, k.FLOPs))
		}
		nodes := ph.Nodes
		if top > 0 && len(nodes) > top {
			nodes = nodes[:top]
		}
		fmt.Fprintf(&b, "  %-32s %5s %10s %6s %9s %8s  %s\n", "by node (top "+fmt.Sprint(len(nodes))+")", "id", "µs/step", "share", "GB/s", "TFLOP/s", "kind")
		for _, n := range nodes {
			fmt.Fprintf(&b, "  %-32s %5d %10.1f %5.1f%% %9s %8s  %s\n", clipText(n.Name, 32), n.ID, n.US, 100*n.Share, num(n.GBs), tflops(n.TFLOPs, n.FLOPs), n.Kind)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func tflops(v float64, flops int64) string {
	if flops == 0 {
		return "-"
	}
	return num(v)
}

// num prints a rate with three significant digits (0.000123, 45.6, 1234).
func num(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func clipText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

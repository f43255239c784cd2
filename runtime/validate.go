package runtime

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/graph"
)

// A plan is input: a file anyone may have edited, damaged or written by
// hand. Before anything is compiled or allocated for it, Open checks it in
// two layers, so that no plan can make the process panic, overflow a size
// or exhaust memory:
//
//   - validate (here) checks the plan's own fields: the run section's
//     context, batch and KV type within the backend's limits, the memory
//     plan sized for the run's batch with one arena per backend, and the
//     logits output as wide as the vocabulary in params;
//   - the backend's Load (cpu.Compile for the CPU) checks the graph against the kernels and the model file:
//     the bound inputs, every value's shape and every operand's kind,
//     attributes in range, each weight's type, dims and byte size against
//     its GGUF tensor (or its repacked range inside the side file), each
//     buffer inside its arena and every size computed without overflow;
//   - the backend's NewState (each session) works out the KV cache, attention
//     scratch and activation memory without overflow and refuses what the
//     machine does not have available, saying how much is needed.
//
// Errors name the field and end in "recompile it with graphc compile".

// maxContext bounds run.ctx and run.batch: positions are int32 (and
// cpu.MaxContext is the same).
const maxContext = math.MaxInt32

// validate checks p's fields (see above).
func (p *Plan) validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("plan field %s = %v: %s", field, v, want)
	}
	r := p.Run
	switch {
	case r.Ctx < 1 || r.Ctx > maxContext:
		return bad("run.ctx", r.Ctx, fmt.Sprintf("want 1 to %d", maxContext))
	case r.Batch < 1 || r.Batch > maxContext:
		return bad("run.batch", r.Batch, fmt.Sprintf("want 1 to %d", maxContext))
	case !validKVType(r.KVType):
		return bad("run.kv_type", fmt.Sprintf("%q", r.KVType), `want "f16", "f32", "q8_0" or "q4_0"`)
	case checkKV(r) != nil:
		return bad("run.kv_type", fmt.Sprintf("%q", r.KVType), checkKV(r).Error())
	case checkFlashAcc(r.FlashAcc, r.FlashAttn) != nil:
		return bad("run.flash_acc", fmt.Sprintf("%q", r.FlashAcc), checkFlashAcc(r.FlashAcc, r.FlashAttn).Error())
	case p.Graph == nil:
		return fmt.Errorf("the plan has no graph")
	}
	g := p.Graph
	if m := g.Memory; m != nil {
		if m.Tokens != r.Batch {
			return bad("graph.memory.tokens", m.Tokens, fmt.Sprintf("the buffers must be planned for run.batch = %d", r.Batch))
		}
		for name, size := range m.Arenas {
			if _, err := backends.Lookup(name); err != nil {
				return bad("graph.memory.arenas", fmt.Sprintf("%q", name), err.Error())
			}
			if !placedOn(g, name) {
				return bad("graph.memory.arenas", fmt.Sprintf("%q", name), "no node of the graph runs on that backend")
			}
			if size < 0 {
				return bad("graph.memory.arenas."+name, size, "want a size in bytes")
			}
		}
	}
	id, ok := g.Outputs["logits"]
	if !ok {
		return fmt.Errorf("plan field graph.outputs has no \"logits\"")
	}
	out := g.Node(id)
	if out == nil {
		return bad("graph.outputs.logits", id, fmt.Sprintf("want a node ID below %d", len(g.Nodes)))
	}
	if len(out.Type.Shape) != 2 || out.Type.Shape[1].N != int64(p.Params.VocabSize) {
		return bad("graph.outputs.logits", id, fmt.Sprintf("node %d (%s %q) is %s, want rows of params.vocab_size = %d logits", id, out.Op, out.Name, out.Type, p.Params.VocabSize))
	}
	return nil
}

// placedOn reports whether some node of g runs on backend.
func placedOn(g *graph.Graph, backend string) bool {
	for _, n := range g.Nodes {
		if n.Backend == backend {
			return true
		}
	}
	return false
}

// checkCustomOps refuses a plan that uses custom ops this program has
// not registered (ops.Register), naming them: the plan's graph cannot be
// checked, let alone run, without their definitions.
func (p *Plan) checkCustomOps() error {
	var missing []string
	for _, op := range p.CustomOps {
		if _, ok := graph.Lookup(op); !ok {
			missing = append(missing, op)
		}
	}
	for _, n := range p.Graph.Nodes {
		if _, ok := graph.Lookup(n.Op); !ok && !slices.Contains(missing, n.Op) {
			missing = append(missing, n.Op)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the plan uses op %s, which this program does not know: a custom op must be registered (ops.Register) by the program that loads the plan, as by the one that compiled it", strings.Join(missing, ", "))
	}
	return nil
}

// validKVType reports whether s names a KV cache type.
func validKVType(s string) bool {
	_, err := backends.ParseKVType(s)
	return err == nil
}

// checkKV applies backends.CheckKV to a plan's run parameters.
func checkKV(r RunParams) error {
	kt, _ := backends.ParseKVType(r.KVType)
	return backends.CheckKV(kt, r.FlashAttn)
}

package runtime

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/reference"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/ops"
)

// bf16Bounds are Options.F16AsBF16's documented bounds on the largest
// per-row ‖Δ‖/‖ref‖ against the llama.cpp F16 references (both KV cache
// types, stored rows and teacher-forced greedy steps' top-5), about twice
// the deviation measured (docs/decisions.md, "F16 weights computed as
// BF16"): bf16 keeps 8 significant bits to f16's 11, so the weights
// themselves move by up to 2⁻⁹ relative, well past the acceptance rule's
// 2e-3 that the plain F16 run meets.
var bf16Bounds = map[string]float64{
	"stories260K-F16": 0.025,
	"synth-15m-f16":   0.013,
}

// TestF16AsBF16References runs the shared F16 models with F16 weights
// computed as BF16 and measures their logits against llama.cpp's F16
// references: the mode must be active (every F16 matmul weight converted,
// logits visibly different from the plain F16 run, which is compared on
// p1 only, to keep the test short) and within bf16Bounds, with top-5 sets
// sharing at least 3 ids everywhere.
func TestF16AsBF16References(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end reference comparison: skipped in -short mode")
	}
	refDir := testenv.Shared(t, "reference")
	modelDir := testenv.Shared(t, "models")
	for _, name := range slices.Sorted(maps.Keys(bf16Bounds)) {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(modelDir, name+".gguf")
			plain, err := Open(path, Options{})
			require.NoError(t, err)
			defer plain.Close()
			m, err := Open(path, Options{F16AsBF16: true})
			require.NoError(t, err)
			defer m.Close()
			want, bytes := f16MatMulWeights(m.Plan)
			require.NotZero(t, want)
			assert.Equal(t, want, m.ConvertedBF16, "converted weights")
			assert.Equal(t, bytes, m.ConvertedBF16Bytes, "converted bytes")
			assert.Zero(t, plain.ConvertedBF16)
			var worst, worstP1, worstPlain, moved float64
			var minOverlap = 5
			for _, p := range []string{"p1", "p2", "p3"} {
				for _, kv := range []string{"", ".kvf32"} {
					ref := reference.Load(t, refDir, fmt.Sprintf("%s.%s%s.json", name, p, kv))
					got := bf16Deviation(t, m, ref)
					t.Logf("%s kv %s: as BF16 max ‖Δ‖/‖ref‖ %.3g, max|Δ| %.3g, top-5 overlap min %d, greedy top-1 %d/%d",
						p, ref.KVType, got.rel, got.abs, got.overlap, got.top1, len(ref.GreedyTokens))
					worst, minOverlap = math.Max(worst, got.rel), min(minOverlap, got.overlap)
					if p != "p1" {
						continue
					}
					base := bf16Deviation(t, plain, ref)
					t.Logf("%s kv %s: plain F16 max ‖Δ‖/‖ref‖ %.3g, max|Δ| %.3g", p, ref.KVType, base.rel, base.abs)
					worstP1, worstPlain = math.Max(worstP1, got.rel), math.Max(worstPlain, base.rel)
					moved = math.Max(moved, maxAbsDiff(got.logits, base.logits))
				}
			}
			t.Logf("%s: as BF16 worst ‖Δ‖/‖ref‖ %.3g (bound %.3g); p1: %.3g, plain F16 %.3g, largest change from the plain run %.3g",
				name, worst, bf16Bounds[name], worstP1, worstPlain, moved)
			assert.LessOrEqual(t, worst, bf16Bounds[name], "deviation from the F16 references")
			assert.GreaterOrEqual(t, minOverlap, 3, "top-5 overlap")
			// Rounding the weights to bf16 moves the logits by about
			// 1e-2 (stories260K) or 1e-3 (synth): a run that left them
			// F16 would differ only in the last bits, if at all.
			assert.Greater(t, moved, 1e-4, "logits identical to the plain F16 run: the conversion is not active")
			assert.Greater(t, worstP1, worstPlain, "no farther from the references than the plain F16 run: the conversion is not active")
		})
	}
}

// bf16Result is one reference's comparison.
type bf16Result struct {
	rel, abs float64 // worst stored row, or greedy step's top-5 logits
	overlap  int     // fewest top-5 ids shared with the reference
	top1     int     // teacher-forced greedy steps whose argmax matches
	logits   []float32
}

// bf16Deviation evaluates ref's prompt and teacher-forces its greedy
// tokens, returning the deviation from its stored rows, the top-5
// agreement and every logit computed (to compare two runs).
func bf16Deviation(t *testing.T, m *Model, ref *reference.Reference) bf16Result {
	s, err := m.NewSession(SessionOptions{Ctx: 2048, KVType: ref.KVType})
	require.NoError(t, err)
	all, err := s.Eval(ref.PromptTokens, true)
	require.NoError(t, err)
	v := ref.NVocab
	r := bf16Result{overlap: 5, logits: slices.Clone(all)}
	for pos := range ref.PromptTokens {
		row := all[pos*v : (pos+1)*v]
		r.overlap = min(r.overlap, reference.Overlap(reference.Top5(row), ref.PromptTopK[pos]))
		if want := ref.Row(pos); want != nil {
			rel, abs := reference.RelDiff(row, want)
			r.rel, r.abs = math.Max(r.rel, rel), math.Max(r.abs, abs)
		}
	}
	logits := all[(len(ref.PromptTokens)-1)*v:]
	for g, tok := range ref.GreedyTokens {
		r.overlap = min(r.overlap, reference.Overlap(reference.Top5(logits), ref.GreedyTopK[g]))
		if reference.Argmax(logits) == tok {
			r.top1++
		}
		if g == len(ref.GreedyTokens)-1 {
			break
		}
		logits, err = s.Eval([]int32{tok}, false)
		require.NoError(t, err)
		r.logits = append(r.logits, logits...)
	}
	return r
}

func maxAbsDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// f16MatMulWeights counts the plan's F16 matrices read as matmul weights,
// and their bytes: what F16AsBF16 converts on the shared models (their
// token_embd is read by GetRows alone and stays F16).
func f16MatMulWeights(p *Plan) (n int, bytes int64) {
	seen := map[int]bool{}
	for _, node := range p.Graph.Nodes {
		for _, id := range ops.MatMulWeights(node) {
			w := p.Graph.Nodes[id]
			if w.Type.DType == gguf.TypeF16 && !seen[id] {
				seen[id] = true
				n++
				bytes += 2 * w.Type.Shape[0].N * w.Type.Shape[1].N
			}
		}
	}
	return n, bytes
}

package passes_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/runtime"
	"github.com/weft-ml/weft/runtime/sample"
)

// TestOptimisedLogitsMatchO0 runs every shared model with all passes and
// with -O0 on the reference prompts, prefill and decode, and requires the
// logits to be bit-identical: fused kernels do the same arithmetic in the
// same order. The -O0 side keeps the weight layouts (weight-layout runs
// too): repacked kernels sum in another order than the GGUF-layout ones,
// which backends/cpu's TestPackedWeights bounds separately. For stories260K
// it also requires llama.cpp's greedy text.
func TestOptimisedLogitsMatchO0(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every shared model twice: skipped in -short mode")
	}
	models, _ := filepath.Glob(filepath.Join(testenv.Shared(t, "models"), "*.gguf"))
	refDir := testenv.Shared(t, "reference")
	for _, path := range models {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		t.Run(name, func(t *testing.T) { compareModel(t, path, name, refDir, []string{"p1", "p2", "p3"}) })
	}
}

type prompt struct {
	PromptTokens []int32 `json:"prompt_tokens"`
	GreedyTokens []int32 `json:"greedy_tokens"`
}

func compareModel(t *testing.T, path, name, refDir string, prompts []string) *runtime.Model {
	opt := open(t, path, runtime.CompileOptions{Batch: 16})
	base := open(t, path, runtime.CompileOptions{Batch: 16, Passes: []string{"placement", "weight-layout"}})
	if len(opt.Plan.Graph.Nodes) >= len(base.Plan.Graph.Nodes) || opt.Plan.Graph.Memory == nil {
		t.Fatalf("passes did not run: %d nodes optimised, %d at -O0", len(opt.Plan.Graph.Nodes), len(base.Plan.Graph.Nodes))
	}
	for _, p := range prompts {
		var ref prompt
		data, err := os.ReadFile(filepath.Join(refDir, name+"."+p+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &ref); err != nil {
			t.Fatal(err)
		}
		steps := ref.GreedyTokens[:min(8, len(ref.GreedyTokens))]
		if strings.HasPrefix(name, "stories260K") {
			steps = ref.GreedyTokens
		}
		got := greedy(t, opt, ref.PromptTokens, steps)
		want := greedy(t, base, ref.PromptTokens, steps)
		if !equal(got.logits, want.logits) {
			t.Errorf("%s: logits differ from -O0 (max ‖Δ‖/‖ref‖ %.3g)", p, worstRel(got.logits, want.logits))
		}
		if strings.HasPrefix(name, "stories260K") && !slices.Equal(got.tokens, ref.GreedyTokens) {
			t.Errorf("%s: greedy tokens %v, llama.cpp %v", p, got.tokens, ref.GreedyTokens)
		}
	}
	return opt
}

func open(t *testing.T, path string, o runtime.CompileOptions) *runtime.Model {
	m, err := runtime.Open(path, runtime.Options{Compile: o})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

type run struct {
	logits [][]float32 // prompt rows, then one row per decode step
	tokens []int32     // our argmax at each step
}

// greedy prefills the prompt in batches (logits for every row), then
// teacher-forces steps one token at a time.
func greedy(t *testing.T, m *runtime.Model, promptIDs, steps []int32) run {
	s, err := m.NewSession(runtime.SessionOptions{Ctx: len(promptIDs) + len(steps) + 1})
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.Eval(promptIDs, true)
	if err != nil {
		t.Fatal(err)
	}
	v := m.VocabSize()
	var r run
	for i := 0; i < len(promptIDs); i++ {
		r.logits = append(r.logits, all[i*v:(i+1)*v])
	}
	last := r.logits[len(r.logits)-1]
	for _, tok := range steps {
		r.tokens = append(r.tokens, sample.Greedy(last))
		if last, err = s.Eval([]int32{tok}, false); err != nil {
			t.Fatal(err)
		}
		r.logits = append(r.logits, last)
	}
	return r
}

func equal(a, b [][]float32) bool {
	for i := range a {
		for j := range a[i] {
			if math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) {
				return false
			}
		}
	}
	return len(a) == len(b)
}

func worstRel(a, b [][]float32) float64 {
	worst := 0.0
	for i := range a {
		var num, den float64
		for j := range a[i] {
			d := float64(a[i][j] - b[i][j])
			num, den = num+d*d, den+float64(b[i][j])*float64(b[i][j])
		}
		worst = math.Max(worst, math.Sqrt(num/den))
	}
	return worst
}

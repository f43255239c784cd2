package cpu

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/model"
	"github.com/weft-ml/weft/passes"
)

// compileSynth lowers a synthetic model and runs the named passes (all if
// none), repacking weights into the returned side data when pack is set.
func compileSynth(t *testing.T, f *gguf.File, pack bool, names ...string) (*graph.Graph, []byte) {
	t.Helper()
	l, err := model.Lower(f)
	if err != nil {
		t.Fatal(err)
	}
	var side []byte
	c := passes.Config{Backends: []backends.Backend{Backend{}}, Tokens: 9}
	if pack {
		c.Weights, c.Packed = f, &side
	}
	list, err := passes.Select(c, names, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&passes.Pipeline{Passes: list}).Run(l.Graph); err != nil {
		t.Fatal(err)
	}
	return l.Graph, side
}

// runBatches runs batches of random tokens (9, 3, 1, 1) from seed.
func runBatches(t *testing.T, g *graph.Graph, f *gguf.File, side []byte, seed uint64) [][]float32 {
	t.Helper()
	p, err := Compile(g, f, Options{MaxTokens: 9, Threads: 3, Packed: side})
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.NewState(32, KVF16)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 11))
	var out [][]float32
	pos := 0
	for _, n := range []int{9, 3, 1, 1} {
		tokens := make([]int32, n)
		for i := range tokens {
			tokens[i] = int32(rng.IntN(32000))
		}
		logits, err := s.Run(tokens, seq(pos, n), seq(0, n))
		if err != nil {
			t.Fatal(err)
		}
		out, pos = append(out, append([]float32(nil), logits...)), pos+n
	}
	return out
}

// TestPackedWeights runs the synthetic Q4_0, Q8_0 and Q4_K_M models with weights
// repacked for the packed kernels: fused and unfused graphs must agree bit
// for bit (one tile function), and both must match the GGUF-layout run to
// float rounding.
func TestPackedWeights(t *testing.T) {
	for _, name := range []string{"synth-15m-q4_0.gguf", "synth-15m-q8_0.gguf", "synth-15m-q4_k_m.gguf"} {
		t.Run(name, func(t *testing.T) {
			f, err := gguf.Open(filepath.Join(testenv.Shared(t, "models"), name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			seed := rand.Uint64()
			plain, _ := compileSynth(t, f, false)
			want := runBatches(t, plain, f, nil, seed)
			fused, side := compileSynth(t, f, true)
			if packedWeights(fused) == 0 {
				if simd.HasPackedKernels(gguf.TypeQ8_0) {
					t.Fatal("no weight was repacked")
				}
				t.Skip("this CPU has no packed kernels: nothing is repacked")
			}
			if name == "synth-15m-q4_k_m.gguf" && simd.HasPackedKernels(gguf.TypeQ4_K) {
				t.Logf("repacked: %d Q4_K, %d Q6_K", packedOfType(fused, gguf.TypeQ4_K), packedOfType(fused, gguf.TypeQ6_K))
				if packedOfType(fused, gguf.TypeQ4_K) == 0 || packedOfType(fused, gguf.TypeQ6_K) == 0 {
					t.Fatal("no Q4_K or no Q6_K weight was repacked")
				}
			}
			got := runBatches(t, fused, f, side, seed)
			unfused, side2 := compileSynth(t, f, true, "placement", "weight-layout")
			same := runBatches(t, unfused, f, side2, seed)
			for b := range want {
				closeLogits(t, b, got[b], want[b])
				for i := range got[b] {
					if math.Float32bits(got[b][i]) != math.Float32bits(same[b][i]) {
						t.Fatalf("batch %d logit %d: fused %g, unfused %g (seed %d)", b, i, got[b][i], same[b][i], seed)
					}
				}
			}
		})
	}
}

// packedOfType counts the repacked weights of type typ.
func packedOfType(g *graph.Graph, typ gguf.TensorType) int {
	n := 0
	for _, w := range g.Nodes {
		if w.Layout != nil && w.Type.DType == typ {
			n++
		}
	}
	return n
}

func packedWeights(g *graph.Graph) int {
	n := 0
	for _, w := range g.Nodes {
		if w.Layout != nil {
			n++
		}
	}
	return n
}

// closeLogits bounds ‖packed − plain‖/‖plain‖. Summation order alone
// differs, but a last-bit change can move a later Q8_0 activation by one
// step, so the models drift apart a little (as against llama.cpp).
func closeLogits(t *testing.T, batch int, got, want []float32) {
	t.Helper()
	var d2, w2 float64
	for i, w := range want {
		d := float64(got[i] - w)
		d2 += d * d
		w2 += float64(w) * float64(w)
	}
	if rel := math.Sqrt(d2 / w2); !(rel <= 0.02) {
		t.Errorf("batch %d: ‖packed − plain‖/‖plain‖ = %.3g", batch, rel)
	}
}

// TestPackedBindingChecked rejects a layout range outside the side data.
func TestPackedBindingChecked(t *testing.T) {
	f, err := gguf.Open(filepath.Join(testenv.Shared(t, "models"), "synth-15m-q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, side := compileSynth(t, f, true)
	if packedWeights(g) == 0 {
		t.Skip("this CPU has no packed kernels: nothing is repacked")
	}
	if _, err := Compile(g, f, Options{MaxTokens: 9, Packed: side[:len(side)-1]}); err == nil {
		t.Fatal("a truncated side file was accepted")
	}
}

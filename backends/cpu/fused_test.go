package cpu

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/model"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/passes"
)

// optimised lowers stories260K and runs the named passes for the CPU.
func optimised(t *testing.T, maxTokens int, names ...string) (*graph.Graph, *gguf.File) {
	t.Helper()
	f, err := gguf.Open(filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	l, err := model.Lower(f)
	if err != nil {
		t.Fatal(err)
	}
	list, err := passes.Select(passes.Config{Backends: []backends.Backend{Backend{}}, Tokens: maxTokens}, names, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	pl := passes.Pipeline{Passes: list}
	if _, err := pl.Run(l.Graph); err != nil {
		t.Fatal(err)
	}
	return l.Graph, f
}

// runPoisoned runs random batches (logits for every row) through a fresh
// state whose arena is filled with NaN first.
func runPoisoned(t *testing.T, g *graph.Graph, f *gguf.File, maxTokens int, seed uint64) [][]float32 {
	t.Helper()
	p, err := Compile(g, f, Options{MaxTokens: maxTokens, Threads: 3})
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.NewState(64, KVF16)
	if err != nil {
		t.Fatal(err)
	}
	for _, sl := range s.slots {
		for i := range sl {
			sl[i] = float32(math.NaN())
		}
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	var out [][]float32
	pos := 0
	for _, n := range []int{maxTokens, 3, 1, 1} {
		tokens := make([]int32, n)
		for i := range tokens {
			tokens[i] = int32(rng.IntN(512))
		}
		logits, err := s.Run(tokens, seq(pos, n), seq(0, n))
		if err != nil {
			t.Fatal(err)
		}
		out, pos = append(out, append([]float32(nil), logits...)), pos+n
	}
	return out
}

// TestFusedKernelsBitIdentical compares the unfused graph with fused ones,
// with the memory plan's arena and with liveness slots, on fresh random
// tokens: fused kernels must reproduce every logit bit for bit.
func TestFusedKernelsBitIdentical(t *testing.T) {
	const maxTokens = 9
	seed := rand.Uint64()
	base, f := optimised(t, maxTokens, "placement")
	want := runPoisoned(t, base, f, maxTokens, seed)
	for _, list := range [][]string{
		nil, // all passes, planned arena
		{"fuse-qkv", "fuse-gateup", "fuse-norm", "fuse-residual"}, // liveness slots
		{"fuse-qkv", "memory-plan"},
	} {
		g, _ := optimised(t, maxTokens, list...)
		fused := 0
		for _, n := range g.Nodes {
			if ops.IsFused(n.Op) {
				fused++
			}
		}
		if fused == 0 {
			t.Fatalf("passes %v fused nothing", list)
		}
		got := runPoisoned(t, g, f, maxTokens, seed)
		for b := range want {
			for i := range want[b] {
				if math.Float32bits(got[b][i]) != math.Float32bits(want[b][i]) {
					t.Fatalf("passes %v, batch %d logit %d: %g, unfused %g (seed %d)", list, b, i, got[b][i], want[b][i], seed)
				}
			}
		}
	}
}

// TestPlannedArenaIsSmaller checks that the CPU program takes the memory
// plan's arena, and that it is smaller than liveness slots laid end to end.
func TestPlannedArenaIsSmaller(t *testing.T) {
	g, f := optimised(t, 16)
	p, err := Compile(g, f, Options{MaxTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.ActivationBytes(), g.Memory.Arenas["cpu"]; got != want {
		t.Fatalf("program arena %d bytes, plan %d", got, want)
	}
	if p.ActivationBytes() >= g.Memory.Naive/4 {
		t.Fatalf("arena %d bytes is not far below the naive %d", p.ActivationBytes(), g.Memory.Naive)
	}
}

// TestPlannedBuffersAreChecked rejects a plan whose buffer lies outside
// the arena.
func TestPlannedBuffersAreChecked(t *testing.T) {
	g, f := optimised(t, 16)
	for _, n := range g.Nodes {
		if n.Buffer != nil {
			n.Buffer.Offset = g.Memory.Arenas["cpu"]
			break
		}
	}
	if _, err := Compile(g, f, Options{MaxTokens: 16}); err == nil {
		t.Fatal("a buffer outside the arena was accepted")
	}
}

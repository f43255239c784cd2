package runtime

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/model/synth"
)

// synthQ4 writes a tiny random Q4_0 llama model (whose weights the CPU
// backend repacks) with the given seed and returns its path.
func synthQ4(t testing.TB, dir string, seed uint64) string {
	t.Helper()
	vocab, err := gguf.Open(stories(t))
	if err != nil {
		t.Fatal(err)
	}
	defer vocab.Close()
	ft, err := synth.ParseFileType("q4_0")
	if err != nil {
		t.Fatal(err)
	}
	shape := synth.Shape{Dim: 64, FFN: 128, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 512, Ctx: 256} // stories260K's vocabulary
	path := filepath.Join(dir, "q4.gguf")
	if err := synth.WriteFile(path, synth.Options{Shape: shape, Type: ft, Seed: seed, Vocab: vocab}); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPackedSideFileIsChecked compiles a model whose weights are repacked
// into the plan's side file, then checks that loading refuses a damaged
// side file and one from another compile of the same size.
func TestPackedSideFileIsChecked(t *testing.T) {
	if !simd.HasPackedKernels(gguf.TypeQ4_0) {
		t.Skip("this build (" + simd.Variant() + ") has no packed kernels, so nothing is repacked")
	}
	dir := t.TempDir()
	compile := func(seed uint64, plan string) string {
		p, err := Compile(synthQ4(t, dir, seed), CompileOptions{Ctx: 64})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := WritePlan(filepath.Join(dir, plan), p); err != nil {
			t.Fatal(err)
		}
		if p.PackedFile == "" {
			t.Fatal("no weights were repacked: the test needs a side file")
		}
		return filepath.Join(dir, p.PackedFile)
	}
	otherSide := compile(2, "other.plan")
	plan, side := filepath.Join(dir, "m.plan"), compile(1, "m.plan")
	m, err := Open(plan, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	good, err := os.ReadFile(side)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := os.ReadFile(otherSide)
	if len(other) != len(good) {
		t.Fatalf("side files differ in size (%d, %d): the swap case needs equal sizes", len(other), len(good))
	}
	damaged := append([]byte(nil), good...)
	damaged[100] ^= 0x10 // inside a sampled region (see packedSum)
	for name, data := range map[string][]byte{"damaged": damaged, "from another compile": other, "truncated": good[:len(good)-64]} {
		os.WriteFile(side, data, 0o644)
		if _, err := Open(plan, Options{}); err == nil || !strings.Contains(err.Error(), "do not belong") {
			t.Errorf("%s side file accepted: %v", name, err)
		}
	}
}

// TestCompileToMatchesInMemory checks that CompileTo, which repacks into
// the mapped side file, writes the same side file as Compile+WritePlan,
// leaves no temporary file, and runs to the same logits as the GGUF.
func TestCompileToMatchesInMemory(t *testing.T) {
	if !simd.HasPackedKernels(gguf.TypeQ4_0) {
		t.Skip("this build (" + simd.Variant() + ") has no packed kernels, so nothing is repacked")
	}
	dir := t.TempDir()
	model := synthQ4(t, dir, 7)
	p, err := CompileTo(model, filepath.Join(dir, "to.plan"), CompileOptions{Ctx: 64})
	if err != nil {
		t.Fatal(err)
	}
	toSide := filepath.Join(dir, p.PackedFile)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	q, err := Compile(model, CompileOptions{Ctx: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := WritePlan(filepath.Join(dir, "mem.plan"), q); err != nil {
		t.Fatal(err)
	}
	to, _ := os.ReadFile(toSide)
	mem, _ := os.ReadFile(filepath.Join(dir, q.PackedFile))
	if len(to) == 0 || string(to) != string(mem) {
		t.Fatalf("side files differ: %d and %d bytes", len(to), len(mem))
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(tmps) > 0 {
		t.Fatalf("temporary files left behind: %v", tmps)
	}
	logits := func(path string) []float32 {
		m, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		s, err := m.NewSession(SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.Eval([]int32{1, 42, 7}, false)
		if err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), out...)
	}
	want, got := logits(model), logits(filepath.Join(dir, "to.plan"))
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("logit %d: plan %g, gguf %g", i, got[i], want[i])
		}
	}
}

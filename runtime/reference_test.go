package runtime

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weft-ml/weft/internal/reference"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/runtime/sample"
)

// top5Stats counts positions by how many of our top-5 ids the reference shares.
type top5Stats struct{ total, atLeast4, min int }

func (s *top5Stats) add(n int) {
	if s.total == 0 || n < s.min {
		s.min = n
	}
	s.total++
	if n >= 4 {
		s.atLeast4++
	}
}

// TestReferenceLogits compares weft with llama.cpp on every shared model,
// prompt and KV cache type: stored logits rows within max(2e-3, 2·spread),
// top-5 agreement at every prompt position and teacher-forced greedy step,
// and exact greedy tokens and text for the trained stories260K models.
func TestReferenceLogits(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end reference comparison is slow: skipped in -short mode")
	}
	refDir := testenv.Shared(t, "reference")
	modelDir := testenv.Shared(t, "models")
	models, _ := filepath.Glob(filepath.Join(modelDir, "*.gguf"))
	for _, path := range models {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		t.Run(name, func(t *testing.T) { checkModel(t, path, name, refDir) })
	}
	// Other architectures' fixtures: run those whose architecture weft lowers.
	archModels, _ := filepath.Glob(filepath.Join(filepath.Dir(modelDir), "models-arch", "*.gguf"))
	archRefs := filepath.Join(filepath.Dir(refDir), "reference-arch")
	for _, path := range archModels {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		t.Run(name, func(t *testing.T) {
			if err := lowerable(path); err != nil {
				t.Skipf("not supported yet: %v", err)
			}
			checkModel(t, path, name, archRefs)
		})
	}
}

// lowerable reports why weft cannot compile a model yet, or nil.
func lowerable(path string) error {
	_, err := Compile(path, CompileOptions{})
	return err
}

func checkModel(t *testing.T, path, name, refDir string) {
	checkModelOn(t, path, name, refDir, Options{})
}

// checkModelOn is checkModel with the model opened with o (a backend).
func checkModelOn(t *testing.T, path, name, refDir string, o Options) {
	m, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var stats top5Stats
	prompts, _ := filepath.Glob(filepath.Join(refDir, name+".p[0-9].json"))
	if len(prompts) == 0 {
		t.Fatalf("no reference files for %s in %s", name, refDir)
	}
	for _, f16Path := range prompts {
		f16 := reference.Load(t, refDir, filepath.Base(f16Path))
		refs := []*reference.Reference{f16}
		bar := reference.Bar(0) // one reference: the rule's floor, its strictest bar
		if !f16Only(refDir) {
			f32 := reference.Load(t, refDir, strings.TrimSuffix(filepath.Base(f16Path), ".json")+".kvf32.json")
			bar = reference.Bar(reference.Spread(f16, f32))
			refs = append(refs, f32)
		}
		for _, ref := range refs {
			checkPrompt(t, m, ref, bar, &stats, strings.HasPrefix(name, "stories260K"))
		}
	}
	frac := float64(stats.atLeast4) / float64(stats.total)
	t.Logf("%s: top-5 overlap min %d, >=4 at %.2f%% of %d positions", name, stats.min, 100*frac, stats.total)
	if stats.min < 3 || frac < 0.99 {
		t.Errorf("%s: top-5 overlap min %d (want >= 3), >=4 at %.2f%% (want >= 99%%)", name, stats.min, 100*frac)
	}
}

// f16Only reports whether refDir holds f16-cache references only (its
// README says why: ik_llama.cpp, the only oracle for some architectures,
// runs no f32 cache). Their bar is then the rule's floor, 2e-3.
func f16Only(refDir string) bool {
	_, err := os.Stat(filepath.Join(refDir, "F16_ONLY"))
	return err == nil
}

func checkPrompt(t *testing.T, m *Model, ref *reference.Reference, bar float64, stats *top5Stats, trained bool) {
	checkPromptWith(t, m, ref, bar, stats, trained, SessionOptions{Ctx: 2048, KVType: ref.KVType})
}

// checkPromptWith is checkPrompt on a session made with so.
func checkPromptWith(t *testing.T, m *Model, ref *reference.Reference, bar float64, stats *top5Stats, trained bool, so SessionOptions) (worstRel float64) {
	label := fmt.Sprintf("%q kv=%s flash=%v", truncate(ref.Prompt, 20), so.KVType, so.FlashAttn)
	ids, err := m.Tokenizer.Encode(ref.Prompt, true, false)
	if err != nil || !slices.Equal(ids, ref.PromptTokens) {
		t.Fatalf("%s: tokens %v (err %v), want %v", label, ids, err, ref.PromptTokens)
	}
	s, err := m.NewSession(so)
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.Eval(ids, true)
	if err != nil {
		t.Fatal(err)
	}
	v := ref.NVocab
	worstAbs := 0.0
	for pos := range ids {
		row := all[pos*v : (pos+1)*v]
		stats.add(reference.Overlap(reference.Top5(row), ref.PromptTopK[pos]))
		if want := ref.Row(pos); want != nil {
			rel, abs := reference.RelDiff(row, want)
			worstRel, worstAbs = math.Max(worstRel, rel), math.Max(worstAbs, abs)
		}
	}
	t.Logf("%s: %d prompt tokens, stored rows max|Δ| %.3g, max ‖Δ‖/‖ref‖ %.3g (bar %.3g)", label, len(ids), worstAbs, worstRel, bar)
	if worstRel > bar {
		t.Errorf("%s: ‖Δ‖/‖ref‖ %.3g exceeds %.3g", label, worstRel, bar)
	}
	checkGreedy(t, s, ref, all[(len(ids)-1)*v:], stats, trained, label)
	return worstRel
}

// checkGreedy teacher-forces the reference's greedy tokens, comparing each
// step's top-5; for trained models it also requires our argmax to match.
func checkGreedy(t *testing.T, s *Session, ref *reference.Reference, logits []float32, stats *top5Stats, trained bool, label string) {
	var text []byte
	for g, want := range ref.GreedyTokens {
		stats.add(reference.Overlap(reference.Top5(logits), ref.GreedyTopK[g]))
		if trained {
			if got := sample.Greedy(logits); got != want {
				t.Fatalf("%s: greedy step %d: got token %d, want %d", label, g, got, want)
			}
			text = append(text, s.Model().Tokenizer.Piece(want)...)
		}
		if g == len(ref.GreedyTokens)-1 {
			break
		}
		var err error
		if logits, err = s.Eval([]int32{want}, false); err != nil {
			t.Fatal(err)
		}
	}
	if trained && fmt.Sprintf("%x", text) != ref.GreedyTextHex {
		t.Errorf("%s: greedy text %q differs from the reference", label, text)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

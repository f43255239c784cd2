package runtime

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/internal/reference"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/runtime/sample"
)

// shiftRefDir holds llama.cpp's context-shift references
// (testdata/shift/README.md).
var shiftRefDir = filepath.Join("..", "testdata", "shift", "reference")

// shiftCase is one context-shift reference pair (f16 and f32 KV cache)
// and the model it was made from.
type shiftCase struct {
	ref     string                    // file name of the f16 reference, without .json
	model   func(t *testing.T) string // the model's path
	trained bool                      // greedy tokens must match exactly
	// vulkanSteps, when set, limits the teacher-forced steps on Vulkan
	// (lavapipe takes about 0.3 s a step of the 50,257-token phi2 model).
	vulkanSteps int
}

func shiftCases() []shiftCase {
	return []shiftCase{
		{ref: "stories260K.p1.c64k5", trained: true, model: func(*testing.T) string { return filepath.Join("..", "testdata", "stories260K.gguf") }},
		{ref: "stories260K-ropefreqs.p1.c64k1", trained: true, model: func(t *testing.T) string {
			return ropeVariant(t, t.TempDir(), "stories260K-ropefreqs")
		}},
		{ref: "synth-phi2-f32.p1.c32k0", vulkanSteps: 27, model: func(t *testing.T) string {
			return filepath.Join(testenv.Shared(t, "models-arch"), "synth-phi2-f32.gguf")
		}},
	}
}

// TestContextShiftReferences runs llama.cpp's context-shift references on
// the CPU: a small context filled by greedy decoding and shifted as
// llama.cpp does (keep n_keep, discard half of the rest, keys rotated by
// RoPE), teacher-forced on the reference's tokens. Every step's top-5 and
// the stored rows (after the shifts) are held to the acceptance rule of
// ../shared/reference/README.md; the shifts must happen at the same steps
// and positions, and on the trained models free-running Generate with
// ContextShift must produce exactly llama.cpp's greedy tokens.
func TestContextShiftReferences(t *testing.T) {
	for _, c := range shiftCases() {
		t.Run(c.ref, func(t *testing.T) { checkShift(t, c, Options{}, 0) })
	}
}

// TestContextShiftReferencesVulkan is TestContextShiftReferences on the
// Vulkan backend (kv_shift.comp).
func TestContextShiftReferencesVulkan(t *testing.T) {
	skipWithoutVulkanDevice(t)
	for _, c := range shiftCases() {
		t.Run(c.ref, func(t *testing.T) {
			checkShift(t, c, Options{Backend: "vulkan", Compile: CompileOptions{Backend: "vulkan"}}, c.vulkanSteps)
		})
	}
}

// checkShift runs case c on a model opened with o, teacher-forcing the
// first steps of the reference (all when steps is 0).
func checkShift(t *testing.T, c shiftCase, o Options, steps int) {
	path := c.model(t)
	m, err := Open(path, o)
	require.NoError(t, err)
	defer m.Close()
	f16 := reference.Load(t, shiftRefDir, c.ref+".json")
	f32 := reference.Load(t, shiftRefDir, c.ref+".kvf32.json")
	bar := reference.Bar(reference.Spread(f16, f32))
	var stats top5Stats
	for _, ref := range []*reference.Reference{f16, f32} {
		label := fmt.Sprintf("kv=%s", ref.KVType)
		s, err := m.NewSession(SessionOptions{Ctx: ref.NCtx, KVType: ref.KVType, ContextShift: true, Keep: ref.NKeep})
		require.NoError(t, err)
		worst, n, shifts := teacherForceShift(t, s, ref, steps, &stats, c.trained, label)
		t.Logf("%s: %d steps, %d shifts, stored rows max ‖Δ‖/‖ref‖ %.3g (bar %.3g)", label, n, shifts, worst, bar)
		require.LessOrEqual(t, worst, bar, "%s: stored rows beyond the acceptance bar", label)
		require.NoError(t, s.Close())
		if c.trained {
			freeRunShift(t, m, ref, label)
		}
	}
	frac := float64(stats.atLeast4) / float64(stats.total)
	t.Logf("top-5 overlap min %d, >=4 at %.2f%% of %d steps", stats.min, 100*frac, stats.total)
	require.GreaterOrEqual(t, stats.min, 3, "top-5 overlap")
	require.GreaterOrEqual(t, frac, 0.99, "top-5 overlap of 4 or more")
}

// teacherForceShift feeds the reference's prompt and its first steps
// greedy tokens (all when steps is 0) one step at a time through Step
// (which shifts as ContextShift says) and returns the largest ‖Δ‖/‖ref‖
// of the stored rows, the steps and the number of shifts.
func teacherForceShift(t *testing.T, s *Session, ref *reference.Reference, steps int, stats *top5Stats, trained bool, label string) (float64, int, int) {
	tokens := ref.GreedyTokens
	if steps > 0 {
		tokens = tokens[:steps]
	}
	logits, err := s.Eval(ref.PromptTokens, false)
	require.NoError(t, err)
	worst := 0.0
	next := 0 // the next shift of the reference
	for g, want := range tokens {
		stats.add(reference.Overlap(reference.Top5(logits), ref.GreedyTopK[g]))
		if trained {
			require.Equal(t, want, sample.Greedy(logits), "%s: greedy step %d", label, g)
		}
		if row := ref.StepRow(g); row != nil {
			rel, _ := reference.RelDiff(logits, row)
			worst = math.Max(worst, rel)
		}
		if g == len(tokens)-1 {
			break
		}
		before := s.Shifts()
		logits, err = s.Step(want)
		require.NoError(t, err, "%s: step %d", label, g)
		shifted := next < len(ref.Shifts) && ref.Shifts[next].Step == g
		require.Equal(t, shifted, s.Shifts() > before, "%s: step %d: shifted %v, llama.cpp %v", label, g, s.Shifts() > before, shifted)
		if shifted {
			next++
		}
		require.Equal(t, ref.GreedyPositions[g]+1, s.Pos(), "%s: step %d: position", label, g)
	}
	for _, sh := range ref.Shifts[next:] {
		require.GreaterOrEqual(t, sh.Step, len(tokens)-1, "%s: llama.cpp shifted at step %d, weft did not", label, sh.Step)
	}
	return worst, len(tokens), next
}

// freeRunShift generates with Generate (greedy, ContextShift) and
// requires llama.cpp's greedy tokens and number of shifts.
func freeRunShift(t *testing.T, m *Model, ref *reference.Reference, label string) {
	s, err := m.NewSession(SessionOptions{Ctx: ref.NCtx, KVType: ref.KVType, ContextShift: true, Keep: ref.NKeep})
	require.NoError(t, err)
	defer s.Close()
	res, err := s.GenerateTokens(context.Background(), ref.PromptTokens,
		GenerateOptions{MaxTokens: len(ref.GreedyTokens), Sampling: sample.Params{Temp: 0}, IgnoreEOS: true}, nil)
	require.NoError(t, err)
	require.True(t, slices.Equal(ref.GreedyTokens, res.Tokens), "%s: Generate's tokens differ from llama.cpp's", label)
	require.Equal(t, len(ref.Shifts), res.ContextShifts, "%s: context shifts", label)
	require.Equal(t, "length", res.StopReason)
}

// TestContextShiftRefusals: without ContextShift a full context is an
// error as before; Keep out of range and a shift with nothing to discard
// are refused and leave the session as it was.
func TestContextShiftRefusals(t *testing.T) {
	m, err := Open(filepath.Join("..", "testdata", "stories260K.gguf"), Options{})
	require.NoError(t, err)
	defer m.Close()
	_, err = m.NewSession(SessionOptions{Ctx: 16, ContextShift: true, Keep: 16})
	require.ErrorContains(t, err, "keep 16 tokens")
	s, err := m.NewSession(SessionOptions{Ctx: 16})
	require.NoError(t, err)
	toks := []int32{1, 403, 407, 261, 378, 1, 403, 407, 261, 378, 1, 403, 407, 261, 378}
	_, err = s.Eval(toks, false)
	require.NoError(t, err)
	_, err = s.Step(1)
	require.NoError(t, err, "the last position is used without ContextShift")
	_, err = s.Step(1)
	require.ErrorIs(t, err, ErrContextFull)
	_, err = s.Shift(15)
	require.ErrorContains(t, err, "nothing to discard")
	require.Equal(t, 16, s.Pos())
	n, err := s.Shift(4)
	require.NoError(t, err)
	require.Equal(t, 6, n)
	require.Equal(t, 10, s.Pos())
	require.Equal(t, append(append([]int32{}, toks[:4]...), append(toks[10:], 1)...), s.History())

	s2, err := m.NewSession(SessionOptions{Ctx: 16, ContextShift: true, Keep: 2})
	require.NoError(t, err)
	_, err = s2.Eval(toks[:10], false)
	require.NoError(t, err)
	_, err = s2.Eval(toks, false)
	require.ErrorIs(t, err, ErrContextFull, "15 new tokens do not fit after discarding 4 of 10")
	require.Equal(t, 10, s2.Pos(), "a refused shift leaves the session as it was")
	require.True(t, strings.Contains(err.Error(), "still do not fit"), err.Error())
}

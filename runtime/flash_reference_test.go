package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/internal/reference"
)

// flashRefs are the references of testdata/flash: per model, its prompts
// and the flash-attention cache types llama.cpp ran (-fa with -ctk/-ctv).
var flashRefs = []struct {
	model   string // file under testdata
	prompts []string
	kv      []string
}{
	{"stories260K.gguf", []string{"p1", "p2", "p3"}, []string{"f16"}},
	{"quants/synth-256-iq4_xs.gguf", []string{"p1", "p2"}, []string{"f16", "q8_0", "q4_0"}},
}

// TestFlashAttentionReferences holds weft's flash attention (CPU) to
// llama.cpp's -fa logits with f16, q8_0 and q4_0 KV caches, under the
// acceptance rule of TestReferenceLogits with the yardstick s taken
// between llama.cpp's runs with and without -fa on the f16 cache (how
// much the flash scheme's own summation and binary16 accumulator move
// the logits): stored rows within max(2e-3, 2·s), top-5 agreement, exact
// greedy tokens on the trained stories260K. The quantized caches are held
// to that same bar, not to the much larger spread quantization causes:
// weft quantizes K and V and the queries with llama.cpp's arithmetic.
func TestFlashAttentionReferences(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end reference comparison: skipped in -short mode")
	}
	checkFlashReferences(t, Options{})
}

// TestFlashAttentionReferencesVulkan runs the same references wholly on
// Vulkan (flash_attn.comp, the q8_0/q4_0 store shaders) under the same
// rule and bars.
func TestFlashAttentionReferencesVulkan(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end reference comparison: skipped in -short mode")
	}
	skipWithoutVulkanDevice(t)
	checkFlashReferences(t, Options{Backend: "vulkan", Compile: CompileOptions{Backend: "vulkan"}})
}

// TestFlashF32AccReferences holds the float32 accumulator (--flash-acc
// f32, not llama.cpp's numerics with an f16 V cache) to the same -fa
// references and bars on the f16 cache: it must stay within the rule
// the binary16 accumulator meets, and it must be in effect (its logits
// differ from the default flash run's).
func TestFlashF32AccReferences(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end reference comparison: skipped in -short mode")
	}
	checkFlashReferencesAcc(t, Options{}, "f32")
	m, err := Open(filepath.Join("..", "testdata", "stories260K.gguf"), Options{})
	require.NoError(t, err)
	defer m.Close()
	ids, err := m.Tokenizer.Encode("Once upon a time, there was a little girl named Lily. She loved to play", true, false)
	require.NoError(t, err)
	eval := func(acc string) []float32 {
		s, err := m.NewSession(SessionOptions{Ctx: 256, FlashAttn: true, FlashAcc: acc})
		require.NoError(t, err)
		defer s.Close()
		out, err := s.Eval(ids, true)
		require.NoError(t, err)
		return append([]float32(nil), out...)
	}
	moved := maxAbsDiff(eval("f32"), eval(""))
	t.Logf("float32 accumulator: largest logit change from the binary16 one %.3g", moved)
	require.NotZero(t, moved, "--flash-acc f32 gave the default accumulator's logits")
}

// checkFlashReferences checks every flash reference with models opened
// with o.
func checkFlashReferences(t *testing.T, o Options) { checkFlashReferencesAcc(t, o, "") }

// checkFlashReferencesAcc is checkFlashReferences with sessions on the
// flash accumulator acc (SessionOptions.FlashAcc); "f32" checks only the
// f16 caches (a quantized V accumulates in float32 either way).
func checkFlashReferencesAcc(t *testing.T, o Options, acc string) {
	dir := filepath.Join("..", "testdata", "flash", "reference")
	for _, fr := range flashRefs {
		path := filepath.Join("..", "testdata", fr.model)
		name := filepath.Base(fr.model[:len(fr.model)-len(".gguf")])
		t.Run(name, func(t *testing.T) {
			m, err := Open(path, o)
			require.NoError(t, err)
			defer m.Close()
			var stats top5Stats
			for _, p := range fr.prompts {
				plain := reference.Load(t, dir, fmt.Sprintf("%s.%s.json", name, p))
				fa := reference.Load(t, dir, fmt.Sprintf("%s.%s.fa.json", name, p))
				bar := reference.Bar(reference.Spread(fa, plain))
				for _, kv := range fr.kv {
					if acc == "f32" && kv != "f16" {
						continue
					}
					file := fmt.Sprintf("%s.%s.fa.json", name, p)
					if kv != "f16" {
						file = fmt.Sprintf("%s.%s.fa-%s.json", name, p, kv)
					}
					ref := reference.Load(t, dir, file)
					require.Equal(t, kv, ref.KVType, file)
					so := SessionOptions{Ctx: 2048, KVType: kv, FlashAttn: true, FlashAcc: acc}
					rel := checkPromptWith(t, m, ref, bar, &stats, name == "stories260K", so)
					if os.Getenv("WEFT_FLASH_TABLE") != "" {
						fmt.Printf("| %s | %s | %s | %s%s | %.3g | %.3g |\n", o.Backend, name, p, kv, acc, rel, bar)
					}
				}
			}
			frac := float64(stats.atLeast4) / float64(stats.total)
			t.Logf("%s: top-5 overlap min %d, >=4 at %.2f%% of %d positions", name, stats.min, 100*frac, stats.total)
			require.GreaterOrEqual(t, stats.min, 3)
			require.GreaterOrEqual(t, frac, 0.99)
		})
	}
}

package synth

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// tiny is small enough for tests yet has whole 32-element blocks everywhere.
var tiny = Shape{Dim: 64, FFN: 96, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 512, Ctx: 256}

func synthBytes(t *testing.T, s Shape, typ string, seed uint64, workers int) []byte {
	t.Helper()
	ft, err := ParseFileType(typ)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	o := Options{Shape: s, Type: ft, Seed: seed, Vocab: stories(t), Workers: workers}
	if err := Write(&buf, o); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func parseT(t *testing.T, b []byte) *gguf.File {
	t.Helper()
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSynthDeterministic(t *testing.T) {
	seed := rand.Uint64()
	a := synthBytes(t, tiny, "q8_0", seed, 1)
	if b := synthBytes(t, tiny, "q8_0", seed, 3); !bytes.Equal(a, b) {
		t.Fatal("same seed, different workers: different bytes")
	}
	if c := synthBytes(t, tiny, "q8_0", seed+1, 2); bytes.Equal(a, c) {
		t.Fatal("different seeds gave the same bytes")
	}
}

// TestSynthContents checks metadata, tensor shapes and the weight
// distribution of an F32 model, then that the Q8_0 and Q4_K_M models of the
// same seed hold exactly what quantizing those F32 weights whole gives.
func TestSynthContents(t *testing.T) {
	seed := rand.Uint64()
	f32 := parseT(t, synthBytes(t, tiny, "f32", seed, 2))
	checkMetadata(t, f32, tiny)
	checkShapes(t, f32, tiny)
	checkWeights(t, f32)
	for _, typ := range []string{"q8_0", "q4_k_m", "f16"} {
		q := parseT(t, synthBytes(t, tiny, typ, seed, 2))
		for i := range q.Tensors {
			ti := &q.Tensors[i]
			src := floats(t, f32, f32.Tensors[i].Name)
			want, err := quant.QuantizeAlloc(ti.Type, src)
			if err != nil || !bytes.Equal(q.TensorData(ti), want) {
				t.Errorf("%s %s (%s): bytes differ from quantizing the F32 model (%v)", typ, ti.Name, ti.Type, err)
			}
		}
	}
}

func floats(t *testing.T, f *gguf.File, name string) []float32 {
	t.Helper()
	ti, ok := f.Tensor(name)
	if !ok {
		t.Fatalf("no tensor %s", name)
	}
	out := make([]float32, ti.NumElements())
	if err := quant.Dequantize(ti.Type, f.TensorData(ti), out); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkMetadata(t *testing.T, f *gguf.File, s Shape) {
	want := map[string]uint32{"llama.embedding_length": 64, "llama.feed_forward_length": 96, "llama.block_count": 2,
		"llama.attention.head_count": 4, "llama.attention.head_count_kv": 2, "llama.rope.dimension_count": 16,
		"llama.context_length": 256, "general.file_type": 0}
	for k, v := range want {
		if got := f.Uint32(k, 12345); got != v {
			t.Errorf("%s = %d, want %d", k, got, v)
		}
	}
	if f.Architecture() != "llama" || f.Float32("llama.attention.layer_norm_rms_epsilon", 0) != 1e-5 ||
		f.Float32("llama.rope.freq_base", 0) != 10000 {
		t.Error("architecture, epsilon or rope base wrong")
	}
	vocab := stories(t)
	for _, kv := range vocab.KV {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			if got, ok := f.Lookup(kv.Key); !ok || got.Type != kv.Value.Type {
				t.Errorf("tokenizer key %s not copied", kv.Key)
			}
		}
	}
	if len(f.Strings("tokenizer.ggml.tokens")) != s.Vocab {
		t.Error("token list not copied")
	}
}

func checkShapes(t *testing.T, f *gguf.File, s Shape) {
	if len(f.Tensors) != 3+9*s.Layers {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), 3+9*s.Layers)
	}
	want := map[string][]uint64{"token_embd.weight": {64, 512}, "output.weight": {64, 512}, "output_norm.weight": {64},
		"blk.1.attn_q.weight": {64, 64}, "blk.1.attn_k.weight": {64, 32}, "blk.1.attn_v.weight": {64, 32},
		"blk.1.attn_output.weight": {64, 64}, "blk.1.ffn_gate.weight": {64, 96}, "blk.1.ffn_up.weight": {64, 96},
		"blk.1.ffn_down.weight": {96, 64}, "blk.1.attn_norm.weight": {64}, "blk.1.ffn_norm.weight": {64}}
	for name, dims := range want {
		ti, ok := f.Tensor(name)
		if !ok || !slices.Equal(ti.Dims, dims) {
			t.Errorf("%s: %v, want %v", name, ti, dims)
		}
	}
}

// checkWeights: norms are ones; weights bounded, centred, spread like the
// product-of-uniforms distribution (standard deviation scale/3).
func checkWeights(t *testing.T, f *gguf.File) {
	for _, ti := range f.Tensors {
		w := floats(t, f, ti.Name)
		if len(ti.Dims) == 1 {
			for _, x := range w {
				if x != 1 {
					t.Fatalf("%s: norm weight %g, want 1", ti.Name, x)
				}
			}
			continue
		}
		var sum, sq float64
		for _, x := range w {
			if math.Abs(float64(x)) >= weightScale {
				t.Fatalf("%s: weight %g out of range", ti.Name, x)
			}
			sum += float64(x)
			sq += float64(x) * float64(x)
		}
		n := float64(len(w))
		mean, std := sum/n, math.Sqrt(sq/n)
		if math.Abs(mean) > 5*std/math.Sqrt(n) || math.Abs(std-weightScale/3) > 0.1*weightScale/3 {
			t.Errorf("%s: mean %g, std %g (want 0, %g)", ti.Name, mean, std, weightScale/3)
		}
	}
}

func TestSynthRejects(t *testing.T) {
	ft, _ := ParseFileType("q4_0")
	bad := tiny
	bad.Heads = 5
	if err := Write(&bytes.Buffer{}, Options{Shape: bad, Type: ft, Vocab: stories(t)}); err == nil || !strings.Contains(err.Error(), "heads") {
		t.Errorf("bad heads: %v", err)
	}
	other := tiny
	other.Vocab = 32000
	if err := Write(&bytes.Buffer{}, Options{Shape: other, Type: ft, Vocab: stories(t)}); err == nil || !strings.Contains(err.Error(), "512 tokens") {
		t.Errorf("vocab mismatch: %v", err)
	}
	if err := Write(&bytes.Buffer{}, Options{Shape: tiny, Type: ft}); err == nil {
		t.Error("no vocabulary accepted")
	}
	odd := Presets["260k"]
	if err := Write(&bytes.Buffer{}, Options{Shape: odd, Type: ft, Vocab: stories(t)}); err == nil || !strings.Contains(err.Error(), "172") {
		t.Errorf("ffn 172 with Q4_0 (llama.cpp refuses it too): %v", err)
	}
}

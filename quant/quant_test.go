package quant

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
)

var allTypes = []gguf.TensorType{
	gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16,
	gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ8_0, gguf.TypeQ8_1,
	gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeQ8_K,
	gguf.TypeIQ4_NL, gguf.TypeIQ4_XS, gguf.TypeTQ1_0, gguf.TypeTQ2_0,
}

func newRand(t testing.TB) *rand.Rand {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 7))
}

// randomWeights draws Laplace-like values with an occasional outlier and a
// random offset, so min/max based formats see asymmetric blocks.
func randomWeights(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	scale, offset := r.Float64()*2+0.01, r.NormFloat64()*0.1
	for i := range x {
		v := r.ExpFloat64() * scale
		if r.IntN(2) == 0 {
			v = -v
		}
		if r.IntN(97) == 0 {
			v *= 4
		}
		x[i] = float32(v + offset*scale)
	}
	return x
}

// maxRelRMSE bounds RMSE/RMS of a quantize-dequantize round trip.
var maxRelRMSE = map[gguf.TensorType]float64{ // 1.3× the worst of 3000 random trials
	gguf.TypeF32: 0, gguf.TypeF16: 6e-4, gguf.TypeBF16: 5e-3,
	gguf.TypeQ4_0: 0.25, gguf.TypeQ4_1: 0.19, gguf.TypeQ5_0: 0.14, gguf.TypeQ5_1: 0.095,
	gguf.TypeQ8_0: 0.017, gguf.TypeQ8_1: 0.017,
	gguf.TypeQ2_K: 0.65, gguf.TypeQ3_K: 0.30, gguf.TypeQ4_K: 0.15, gguf.TypeQ5_K: 0.078, gguf.TypeQ6_K: 0.047, gguf.TypeQ8_K: 0.038,
	gguf.TypeIQ4_NL: 0.21, gguf.TypeIQ4_XS: 0.17,
	gguf.TypeTQ1_0: 1, gguf.TypeTQ2_0: 1, // worst 0.94: only ternary weights survive (TestTernaryExact)
}

func relRMSE(x, y []float32) float64 {
	var e, s float64
	for i := range x {
		d := float64(x[i]) - float64(y[i])
		e += d * d
		s += float64(x[i]) * float64(x[i])
	}
	return math.Sqrt(e / s)
}

func TestRoundTripRandom(t *testing.T) {
	r := newRand(t)
	for _, typ := range allTypes {
		bs := int(typ.BlockSize())
		if bs == 1 {
			bs = 32
		}
		for _, blocks := range []int{1, 3, 7} {
			x := randomWeights(r, blocks*bs)
			q, err := QuantizeAlloc(typ, x)
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			y := make([]float32, len(x))
			for i := range y {
				y[i] = float32(math.NaN()) // poison
			}
			if err := Dequantize(typ, q, y); err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			if e := relRMSE(x, y); !(e <= maxRelRMSE[typ]) {
				t.Errorf("%s, %d blocks: relative rmse %.4g above %.4g", typ, blocks, e, maxRelRMSE[typ])
			}
		}
	}
}

// The symmetric legacy formats are fixed points: quantizing their own
// dequantized values gives the same bytes back.
func TestRequantizeIsIdentity(t *testing.T) {
	r := newRand(t)
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ8_0, gguf.TypeF16, gguf.TypeBF16} {
		q, _ := QuantizeAlloc(typ, randomWeights(r, 5*32))
		y := make([]float32, 5*32)
		if err := Dequantize(typ, q, y); err != nil {
			t.Fatal(err)
		}
		q2, _ := QuantizeAlloc(typ, y)
		if string(q) != string(q2) {
			t.Errorf("%s: requantizing the dequantized block changed it", typ)
		}
	}
}

func TestZeroBlocks(t *testing.T) {
	for _, typ := range allTypes {
		n := int(max(typ.BlockSize(), 32)) * 2
		q, err := QuantizeAlloc(typ, make([]float32, n))
		if err != nil {
			t.Fatal(err)
		}
		y := make([]float32, n)
		y[0] = 1
		if err := Dequantize(typ, q, y); err != nil {
			t.Fatal(err)
		}
		for i, v := range y {
			if v != 0 {
				t.Fatalf("%s: zero input gives %v at %d", typ, v, i)
			}
		}
	}
}

func TestErrors(t *testing.T) {
	for _, typ := range []gguf.TensorType{gguf.TypeMXFP4, gguf.TypeI8, gguf.TypeF64, 99} {
		if Supported(typ) {
			t.Errorf("%s reported supported", typ)
		}
		err := Dequantize(typ, make([]byte, 66), make([]float32, 256))
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: Dequantize error %v does not wrap ErrUnsupported", typ, err)
		}
		if _, err := QuantizeAlloc(typ, make([]float32, 256)); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: QuantizeAlloc error %v", typ, err)
		}
	}
	err := Quantize(gguf.TypeMXFP4, make([]float32, 256), make([]byte, 136))
	if err == nil || !strings.Contains(err.Error(), "unsupported tensor type MXFP4") {
		t.Errorf("message %q lacks the type", err)
	}
	// The lattice types are read, not written: the error says why.
	for _, typ := range []gguf.TensorType{gguf.TypeIQ2_XXS, gguf.TypeIQ2_XS, gguf.TypeIQ2_S, gguf.TypeIQ3_XXS,
		gguf.TypeIQ3_S, gguf.TypeIQ1_S, gguf.TypeIQ1_M} {
		if !Supported(typ) || Writable(typ) {
			t.Errorf("%s: Supported %v, Writable %v; want read-only", typ, Supported(typ), Writable(typ))
		}
		err := Quantize(typ, make([]float32, 256), make([]byte, typ.BlockBytes()))
		if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "importance matrix") {
			t.Errorf("%s: Quantize error %v", typ, err)
		}
		if _, err := QuantizeAlloc(typ, make([]float32, 256)); !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s: QuantizeAlloc error %v", typ, err)
		}
		if err := Dequantize(typ, make([]byte, typ.BlockBytes()), make([]float32, 256)); err != nil {
			t.Errorf("%s: Dequantize: %v", typ, err)
		}
	}
	err = UnsupportedError("blk.0.ffn_up.weight", gguf.TypeIQ1_S)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "blk.0.ffn_up.weight") || !strings.Contains(err.Error(), "IQ1_S") {
		t.Errorf("UnsupportedError: %v", err)
	}
	for _, c := range []struct {
		typ    gguf.TensorType
		n, nb  int
		reason string
	}{
		{gguf.TypeQ4_0, 33, 18, "not whole blocks"},
		{gguf.TypeQ4_0, 32, 17, "short source"},
		{gguf.TypeQ4_0, 32, 19, "long source"},
		{gguf.TypeQ4_K, 128, 72, "half a super-block"},
		{gguf.TypeF16, 3, 4, "short F16"},
	} {
		if err := Dequantize(c.typ, make([]byte, c.nb), make([]float32, c.n)); err == nil {
			t.Errorf("Dequantize %s: no error for %s", c.typ, c.reason)
		}
		if err := Quantize(c.typ, make([]float32, c.n), make([]byte, c.nb)); err == nil {
			t.Errorf("Quantize %s: no error for %s", c.typ, c.reason)
		}
	}
	if _, err := QuantizeAlloc(gguf.TypeQ6_K, make([]float32, 100)); err == nil {
		t.Error("QuantizeAlloc: no error for a partial block")
	}
}

// TestLlamaCppAccuracy repeats llama.cpp's test-quantize-fns on its own
// synthetic data (0.1 + 2·cos(i + offset), 4096 values) with its thresholds:
// sqrt(Σ err²)/n for the round trip and |dot - exact|/n for VecDot.
func TestLlamaCppAccuracy(t *testing.T) {
	const n = 32 * 128
	gen := func(offset float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(0.1 + 2*float64(float32(math.Cos(float64(float32(i)+offset)))))
		}
		return x
	}
	x, x2 := gen(0), gen(1)
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ8_0,
		gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeF16, gguf.TypeBF16,
		gguf.TypeIQ4_NL, gguf.TypeIQ4_XS} {
		maxErr, maxDot := 0.002, 0.02
		switch typ {
		case gguf.TypeQ2_K:
			maxErr, maxDot = 0.0075, 0.04
		case gguf.TypeQ3_K:
			maxErr, maxDot = 0.0040, 0.04
		}
		q, _ := QuantizeAlloc(typ, x)
		y := make([]float32, n)
		if err := Dequantize(typ, q, y); err != nil {
			t.Fatal(err)
		}
		var s, exact float64
		for i := range x {
			d := float64(x[i]) - float64(y[i])
			s += d * d
			exact += float64(x[i]) * float64(x2[i])
		}
		a, _ := QuantizeAlloc(VecDotType(typ), x2)
		dotErr := math.Abs(float64(VecDot(typ, n, q, a))-exact) / n
		rt := math.Sqrt(s) / n
		t.Logf("%-5s round-trip error %.2e (llama.cpp limit %.0e), dot error %.2e (limit %.0e)", typ, rt, maxErr, dotErr, maxDot)
		if rt > maxErr || dotErr > maxDot {
			t.Errorf("%s exceeds llama.cpp's limits", typ)
		}
	}
}

// TestTernaryExact: weights that are d·{−1, 0, 1} with a binary16 d (every
// block holding a ±d) come back exactly from TQ1_0 and TQ2_0.
func TestTernaryExact(t *testing.T) {
	r := newRand(t)
	for _, typ := range []gguf.TensorType{gguf.TypeTQ1_0, gguf.TypeTQ2_0} {
		const n = 3 * 256
		x := make([]float32, n)
		for b := 0; b < n/256; b++ {
			d := FP16ToFP32(FP32ToFP16(float32(r.Float64()*4 + 0.01)))
			for i := b * 256; i < (b+1)*256; i++ {
				x[i] = d * float32(r.IntN(3)-1)
			}
			x[b*256+r.IntN(256)] = -d
		}
		q, err := QuantizeAlloc(typ, x)
		require.NoError(t, err)
		y := make([]float32, n)
		require.NoError(t, Dequantize(typ, q, y))
		require.Equal(t, x, y, "%s", typ)
	}
}

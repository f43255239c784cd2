package quant

import (
	"math"
	"testing"

	"github.com/weft-ml/weft/gguf"
)

var dotTypes = []gguf.TensorType{
	gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16,
	gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ8_0,
	gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K,
	gguf.TypeIQ4_NL, gguf.TypeIQ4_XS, gguf.TypeTQ1_0, gguf.TypeTQ2_0,
}

func dequantAll(t *testing.T, typ gguf.TensorType, b []byte, n int) []float32 {
	t.Helper()
	y := make([]float32, n)
	if err := Dequantize(typ, b, y); err != nil {
		t.Fatal(err)
	}
	return y
}

// TestVecDot checks VecDot two ways: against the float64 dot of both rows
// dequantized (only float32 rounding may differ), and against the exact
// activations (the activation quantization error, bounded per block).
func TestVecDot(t *testing.T) {
	r := newRand(t)
	for _, wt := range dotTypes {
		at := VecDotType(wt)
		bs := int(max(wt.BlockSize(), at.BlockSize(), 32))
		for _, blocks := range []int{1, 3, 5} {
			n := blocks * bs
			w, act := randomWeights(r, n), randomWeights(r, n)
			wq, _ := QuantizeAlloc(wt, w)
			aq := make([]byte, len(mustAlloc(t, at, act)))
			if err := CheckVecDot(wt, n, wq, aq); err != nil {
				t.Fatal(err)
			}
			QuantizeRow(at, act, aq)
			got := float64(VecDot(wt, n, wq, aq))
			wd, ad := dequantAll(t, wt, wq, n), dequantAll(t, at, aq, n)
			var exactQ, exact, absSum, bound float64
			for i := range wd {
				exactQ += float64(wd[i]) * float64(ad[i])
				exact += float64(wd[i]) * float64(act[i])
				absSum += math.Abs(float64(wd[i]) * float64(ad[i]))
			}
			roundTol := absSum*float64(n+8)*0x1p-24*2 + q8_1SumRounding(wt, wq, aq)
			if math.Abs(got-exactQ) > roundTol {
				t.Errorf("%s·%s n=%d: VecDot %v, dequantized dot %v (tolerance %.3g)", wt, at, n, got, exactQ, roundTol)
			}
			bound = activationErrorBound(at, wd, act)
			if math.Abs(got-exact) > bound+roundTol {
				t.Errorf("%s·%s n=%d: VecDot %v, exact %v: error above the activation bound %.3g", wt, at, n, got, exact, bound)
			}
		}
	}
}

// q8_1SumRounding bounds the extra error of the offset formats: ggml uses
// the activation block sum s = d·Σq as stored in binary16, times the weight
// block's min m. s is rounded once to binary16 and computed from the
// unrounded d, hence twice the binary16 half-step.
func q8_1SumRounding(wt gguf.TensorType, wq, aq []byte) float64 {
	if VecDotType(wt) != gguf.TypeQ8_1 {
		return 0
	}
	wb := int(wt.BlockBytes())
	var tol float64
	for b := 0; b < len(aq)/q8_1Bytes; b++ {
		tol += math.Abs(float64(f16(wq, b*wb+2))*float64(f16(aq, b*q8_1Bytes+2))) * 2 * 0x1p-11
	}
	return tol
}

func mustAlloc(t *testing.T, typ gguf.TensorType, x []float32) []byte {
	t.Helper()
	b, err := QuantizeAlloc(typ, x)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// activationErrorBound bounds |Σ w·(a - â)|: each activation moves by at
// most half a step (amax/127 per block for the Q8 types, with slack for the
// f16 rounding of d) or by its binary16/bfloat16 rounding.
func activationErrorBound(at gguf.TensorType, w, a []float32) float64 {
	bs := int(at.BlockSize())
	var bound float64
	for b := 0; b < len(a)/bs; b++ {
		var amax float64
		for _, v := range a[b*bs : (b+1)*bs] {
			amax = max(amax, math.Abs(float64(v)))
		}
		for i := b * bs; i < (b+1)*bs; i++ {
			var step float64
			switch at {
			case gguf.TypeQ8_0, gguf.TypeQ8_1, gguf.TypeQ8_K:
				step = amax / 127 * (0.5 + 127*0x1p-11)
			case gguf.TypeF16:
				step = math.Abs(float64(a[i]))*0x1p-11 + 0x1p-25
			case gguf.TypeBF16:
				step = math.Abs(float64(a[i])) * 0x1p-8
			}
			bound += math.Abs(float64(w[i])) * step
		}
	}
	return bound
}

func TestVecDotTypeAndChecks(t *testing.T) {
	pairs := map[gguf.TensorType]gguf.TensorType{
		gguf.TypeQ4_0: gguf.TypeQ8_0, gguf.TypeQ5_0: gguf.TypeQ8_0, gguf.TypeQ8_0: gguf.TypeQ8_0,
		gguf.TypeQ4_1: gguf.TypeQ8_1, gguf.TypeQ5_1: gguf.TypeQ8_1, gguf.TypeQ2_K: gguf.TypeQ8_K,
		gguf.TypeQ6_K: gguf.TypeQ8_K, gguf.TypeIQ4_NL: gguf.TypeQ8_0, gguf.TypeIQ4_XS: gguf.TypeQ8_K, gguf.TypeF16: gguf.TypeF16, gguf.TypeBF16: gguf.TypeBF16, gguf.TypeF32: gguf.TypeF32,
	}
	for w, a := range pairs {
		if got := VecDotType(w); got != a {
			t.Errorf("VecDotType(%s) = %s, want %s", w, got, a)
		}
	}
	if err := CheckVecDot(gguf.TypeQ4_K, 256, make([]byte, 144), make([]byte, 291)); err == nil {
		t.Error("short activation row accepted")
	}
	if err := CheckVecDot(gguf.TypeQ4_0, 48, make([]byte, 36), make([]byte, 68)); err == nil {
		t.Error("partial block accepted")
	}
	if err := CheckVecDot(gguf.TypeQ8_K, 256, make([]byte, 292), make([]byte, 292)); err == nil {
		t.Error("Q8_K has no weight dot product, yet was accepted")
	}
	if v := VecDot(gguf.TypeMXFP4, 256, nil, nil); !math.IsNaN(float64(v)) {
		t.Errorf("unsupported VecDot gave %v, want NaN", v)
	}
}

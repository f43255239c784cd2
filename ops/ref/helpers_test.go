package ref

import (
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/weft-ml/weft/quant"
)

// newRNG returns a generator seeded from the test name plus a fresh random
// value, logged so that a failure can be replayed: WEFT_TEST_SEED=<seed>
// go test -run <name> uses the logged value again.
func newRNG(t testing.TB) *rand.Rand {
	seed := rand.Uint64()
	if s := os.Getenv("WEFT_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("WEFT_TEST_SEED=%q: want an unsigned decimal seed as a test logged it", s)
		}
		seed = v
	}
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, uint64(len(t.Name()))))
}

// randVec returns n values uniform in [-scale, scale), never all zero.
func randVec(rng *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = (rng.Float32()*2 - 1) * scale
	}
	return v
}

// poison fills v with NaN so that an output a kernel forgets to write shows.
func poison(v []float32) {
	for i := range v {
		v[i] = float32(math.NaN())
	}
}

// f16Of rounds through package quant's binary16 conversion, an
// implementation independent of this package's.
func f16Of(x float32) float64 { return float64(quant.FP16ToFP32(quant.FP32ToFP16(x))) }

// bf16Of rounds through package quant's bfloat16 conversion.
func bf16Of(x float32) float64 { return float64(quant.BF16ToFP32(quant.FP32ToBF16(x))) }

// within fails t when |got-want| > tol, naming what was compared.
func within(t *testing.T, what string, got float32, want, tol float64) bool {
	t.Helper()
	if d := math.Abs(float64(got) - want); !(d <= tol) {
		t.Errorf("%s: got %.9g want %.9g (diff %.3g > tol %.3g)", what, got, want, d, tol)
		return false
	}
	return true
}

// ulp32 is the spacing of float32 values at x.
func ulp32(x float64) float64 {
	f := float32(math.Abs(x))
	return float64(math.Nextafter32(f, float32(math.Inf(1))) - f)
}

package ref

import (
	"math"
	"testing"
)

func TestMulAddScaleBroadcast(t *testing.T) {
	rng := newRNG(t)
	for _, shape := range [][2]int{{1, 13}, {5, 7}, {3, 288}} {
		rows, n := shape[0], shape[1]
		a, b := randVec(rng, rows*n, 3), randVec(rng, n, 3)
		mul, add, sc := make([]float32, rows*n), make([]float32, rows*n), make([]float32, rows*n)
		poison(mul)
		poison(add)
		poison(sc)
		Mul(mul, a, b)
		Add(add, a, b)
		Scale(sc, a, 0.37)
		for i := range a {
			// float32 products and sums are the float64 ones rounded once
			if mul[i] != float32(float64(a[i])*float64(b[i%n])) ||
				add[i] != float32(float64(a[i])+float64(b[i%n])) ||
				sc[i] != float32(float64(a[i])*float64(float32(0.37))) {
				t.Fatalf("element %d of %v wrong", i, shape)
			}
		}
	}
}

func silu64(x float64) float64 { return x / (1 + math.Exp(-x)) }

func TestSiLUAndSwiGLU(t *testing.T) {
	rng := newRNG(t)
	for _, n := range []int{3, 16, 37, 768} {
		x, up := randVec(rng, n, 12), randVec(rng, n, 2)
		s, g := make([]float32, n), make([]float32, n)
		poison(s)
		poison(g)
		SiLU(s, x)
		SwiGLU(g, x, up)
		for i := range x {
			want := silu64(float64(x[i]))
			within(t, "silu", s[i], want, 4*ulp32(want)+1e-12)
			within(t, "swiglu", g[i], want*float64(up[i]), 6*ulp32(want*float64(up[i]))+1e-12)
		}
	}
	// aliasing: the gate buffer is the output
	x, up := randVec(rng, 40, 5), randVec(rng, 40, 5)
	want := make([]float32, 40)
	SwiGLU(want, x, up)
	SwiGLU(x, x, up)
	for i := range x {
		if x[i] != want[i] {
			t.Fatalf("aliased SwiGLU differs at %d", i)
		}
	}
}

func gelu64(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*x*(1+0.044715*x*x)))
}

func TestGELU(t *testing.T) {
	rng := newRNG(t)
	x := randVec(rng, 5000, 12)
	x[0], x[1], x[2] = -10, 10, 11.5
	dst := make([]float32, len(x))
	poison(dst)
	GELU(dst, x)
	for i, v := range x {
		if v <= -10 || v >= 10 {
			within(t, "gelu tails", dst[i], math.Max(0, float64(v)), 0)
			continue
		}
		// ggml's table: input and output rounded to binary16; in the left
		// tail 1+tanh cancels in float32, worth |x|·2⁻²⁴ absolute
		want := f16Of(float32(gelu64(f16Of(v))))
		within(t, "gelu table", dst[i], want, 1e-3*math.Abs(want)+math.Abs(float64(v))*0x1p-23)
		within(t, "gelu", dst[i], gelu64(float64(v)), 2e-3*math.Abs(float64(v))+1e-4)
	}
}

func TestSoftmaxRow(t *testing.T) {
	rng := newRNG(t)
	for _, n := range []int{1, 5, 16, 33, 512, 1000} {
		row := randVec(rng, n, 20)
		if n > 3 {
			row[2] = float32(math.Inf(-1)) // masked
		}
		want := make([]float64, n)
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, float64(v)*0.125)
		}
		var sum float64
		for i, v := range row {
			want[i] = math.Exp(float64(v)*0.125 - mx)
			sum += want[i]
		}
		SoftmaxRow(row, 0.125)
		for i := range row {
			within(t, "softmax", row[i], want[i]/sum, 1e-6*want[i]/sum+1e-12)
		}
		if n > 3 && row[2] != 0 {
			t.Fatalf("masked entry got %g", row[2])
		}
	}
}

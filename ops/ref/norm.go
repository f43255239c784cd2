package ref

import "math"

// RMSNorm normalises each row of n elements of x by its root mean square,
// as ggml_rms_norm does: the squares (rounded to float32) are summed in
// float64, and every element is multiplied by 1/sqrt(mean+eps) in float32.
// len(x) must be a multiple of n and len(dst) >= len(x); dst may alias x.
// The learned weight is a separate Mul.
func RMSNorm(dst, x []float32, n int, eps float32) {
	for r := 0; r+n <= len(x); r += n {
		row := x[r : r+n]
		var sum float64
		for _, v := range row {
			sum += float64(v * v)
		}
		mean := float32(sum / float64(n))
		scale := 1 / sqrtf(mean+eps)
		out := dst[r : r+n]
		for i, v := range row {
			out[i] = v * scale
		}
	}
}

// LayerNorm centres each row of n elements of x and divides it by its
// standard deviation, as ggml_norm does: mean and variance summed in
// float64, the centred values and the scale in float32. Preconditions as for
// RMSNorm; weight and bias are separate Mul and Add ops.
func LayerNorm(dst, x []float32, n int, eps float32) {
	for r := 0; r+n <= len(x); r += n {
		row, out := x[r:r+n], dst[r:r+n]
		var sum float64
		for _, v := range row {
			sum += float64(v)
		}
		mean := float32(sum / float64(n))
		var sum2 float64
		for i, v := range row {
			c := v - mean
			out[i] = c
			sum2 += float64(c * c)
		}
		variance := float32(sum2 / float64(n))
		scale := 1 / sqrtf(variance+eps)
		for i := range out {
			out[i] *= scale
		}
	}
}

// sqrtf is the correctly rounded float32 square root.
func sqrtf(x float32) float32 { return float32(math.Sqrt(float64(x))) }

package ref

import "math"

// SoftmaxRow replaces row with softmax(row·scale) in place, as ggml_soft_max
// computes one row: scale in float32, exponentials of (x-max) by ggml's
// vectorised exp in whole groups of 16 (libm's expf for the rest), each
// group's sum reduced in float32 and accumulated in float64, and the row
// multiplied by the float32 value of 1/sum. Entries of -Inf (masked) become
// exactly 0; at least one entry must be finite.
func SoftmaxRow(row []float32, scale float32) {
	SoftmaxRowWith(row, scale, ExpGroups)
}

// SoftmaxRowWith is SoftmaxRow with groups standing in for ExpGroups, so
// that a vector kernel computing the same bits can take the hot step.
func SoftmaxRowWith(row []float32, scale float32, groups func(row []float32, maxv float32) float64) {
	for i, v := range row {
		row[i] = v * scale
	}
	softmaxScaled(row, groups)
}

// softmaxScaled is SoftmaxRow after the scaling step.
func softmaxScaled(row []float32, groups func(row []float32, maxv float32) float64) {
	maxv := float32(math.Inf(-1))
	for _, v := range row {
		maxv = max(maxv, v)
	}
	vec := len(row) &^ (lanes - 1)
	sum := groups(row[:vec], maxv)
	for i := vec; i < len(row); i++ {
		e := expf(row[i] - maxv)
		sum += float64(e)
		row[i] = e
	}
	inv := float32(1 / sum)
	for i := range row {
		row[i] *= inv
	}
}

// ExpGroups replaces each x of row (a whole number of groups of 16) with
// ggml's vectorised exp(x − maxv) and returns the float64 sum of the
// groups' float32 sums, each reduced as _mm512_reduce_add_ps does.
func ExpGroups(row []float32, maxv float32) float64 {
	var sum float64
	for i := 0; i+lanes <= len(row); i += lanes {
		var group [lanes]float32
		for j := range group {
			group[j] = expApprox(row[i+j] - maxv)
			row[i+j] = group[j]
		}
		sum += float64(hsum(&group))
	}
	return sum
}

package ref

import "math"

// SoftmaxRow replaces row with softmax(row·scale) in place, as ggml_soft_max
// computes one row: scale in float32, exponentials of (x-max) by ggml's
// vectorised exp in whole groups of 16 (libm's expf for the rest), each
// group's sum reduced in float32 and accumulated in float64, and the row
// multiplied by the float32 value of 1/sum. Entries of -Inf (masked) become
// exactly 0; at least one entry must be finite.
func SoftmaxRow(row []float32, scale float32) {
	SoftmaxRowWith(row, scale, GoSoftmax())
}

// SoftmaxSteps are the loops of SoftmaxRow a vector unit may take over;
// each must leave exactly the bits of the pure-Go step.
type SoftmaxSteps struct {
	// ScaleMax multiplies row by scale in place and returns its largest
	// entry, NaN if any entry is NaN (the sign of a zero maximum does
	// not matter: x − (±0) rounds the same for every x that can follow).
	ScaleMax func(row []float32, scale float32) float32
	// ExpGroups is ExpGroups.
	ExpGroups func(row []float32, maxv float32) float64
	// Scale multiplies row by s in place.
	Scale func(row []float32, s float32)
}

// GoSoftmax returns SoftmaxRow's pure-Go steps.
func GoSoftmax() SoftmaxSteps {
	return SoftmaxSteps{ScaleMax: ScaleMax, ExpGroups: ExpGroups, Scale: scaleInPlace}
}

func scaleInPlace(row []float32, s float32) { Scale(row, row, s) }

// SoftmaxRowWith is SoftmaxRow with steps standing in for its loops.
func SoftmaxRowWith(row []float32, scale float32, steps SoftmaxSteps) {
	maxv := steps.ScaleMax(row, scale)
	vec := len(row) &^ (lanes - 1)
	sum := steps.ExpGroups(row[:vec], maxv)
	for i := vec; i < len(row); i++ {
		e := expf(row[i] - maxv)
		sum += float64(e)
		row[i] = e
	}
	steps.Scale(row, float32(1/sum))
}

// ScaleMax multiplies row by scale in place and returns the largest
// entry (NaN if any is NaN, −Inf for an empty row).
func ScaleMax(row []float32, scale float32) float32 {
	maxv := float32(math.Inf(-1))
	for i, v := range row {
		row[i] = v * scale
		maxv = max(maxv, row[i])
	}
	return maxv
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

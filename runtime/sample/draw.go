package sample

import "math"

// Greedy returns the id of the largest logit, ties to the lower id, or -1
// when logits is empty. NaN never wins unless every logit is NaN (then 0).
func Greedy(logits []float32) int32 {
	if len(logits) == 0 {
		return -1
	}
	best := 0
	for i, l := range logits {
		if l > logits[best] || (logits[best] != logits[best] && l == l) {
			best = i
		}
	}
	return int32(best)
}

// argmax is Greedy over candidates in id order.
func argmax(c []candidate) int32 {
	best := 0
	for i, x := range c {
		if x.logit > c[best].logit {
			best = i
		}
	}
	return c[best].id
}

// draw divides the survivors' logits by the temperature and picks one with
// probability proportional to its softmax weight. Weights are summed in
// float64 so that a long tail of tiny probabilities is not lost.
func (s *Sampler) draw(c []candidate) int32 {
	t := s.p.Temp
	peak := float32(math.Inf(-1))
	for _, x := range c {
		peak = float32(math.Max(float64(peak), float64(x.logit/t)))
	}
	var total float64
	for _, x := range c {
		total += expShift(x.logit/t, peak)
	}
	u := s.rng.Float64() * total
	var acc float64
	last := c[0].id
	for _, x := range c {
		w := expShift(x.logit/t, peak)
		if w == 0 {
			continue
		}
		acc += w
		if u < acc {
			return x.id
		}
		last = x.id
	}
	return last // u rounded up to total
}

package sample

import "math"

// penalize applies llama.cpp's repetition penalties to the logit of a token
// seen count > 0 times. Dividing a negative logit would raise it, so those
// are multiplied instead.
func penalize(logit float32, count int32, p *Params) float32 {
	if logit <= 0 {
		logit *= p.RepeatPenalty
	} else {
		logit /= p.RepeatPenalty
	}
	return logit - float32(count)*p.FrequencyPenalty - p.PresencePenalty
}

// expShift returns exp(x - peak), defined as 1 for x == peak so that infinite
// maxima do not produce NaN.
func expShift(x, peak float32) float64 {
	if x == peak {
		return 1
	}
	return math.Exp(float64(x - peak))
}

// topP keeps the shortest prefix of c (sorted by rank) whose softmax mass
// reaches p, and at least one token. Like llama.cpp it sums in float32.
func topP(c []candidate, p float32) []candidate {
	if p >= 1 || len(c) == 0 {
		return c
	}
	peak := c[0].logit
	kept, _ := cutTopP(c, p, peak, softmaxSum(c, peak))
	return kept
}

// topPUnsorted is topP for candidates in no order. It sorts only a growing
// best-first prefix until that prefix holds mass p, since a peaked
// distribution reaches p long before the end of a 150k vocabulary.
func topPUnsorted(c []candidate, p float32) []candidate {
	if p >= 1 || len(c) == 0 {
		return c
	}
	peak := c[0].logit
	for _, x := range c {
		peak = float32(math.Max(float64(peak), float64(x.logit)))
	}
	sum := softmaxSum(c, peak)
	// Beyond an eighth of the candidates a full sort is cheaper than
	// another selection pass.
	for k := 64; k <= len(c)/8; k *= 8 {
		if kept, ok := cutTopP(selectTopK(c, k), p, peak, sum); ok {
			return kept
		}
	}
	sortByRank(c)
	kept, _ := cutTopP(c, p, peak, sum)
	return kept
}

func softmaxSum(c []candidate, peak float32) float32 {
	var sum float32
	for _, x := range c {
		sum += float32(expShift(x.logit, peak))
	}
	return sum
}

// cutTopP walks the sorted prefix c accumulating probabilities normalized by
// sum and cuts where they reach p; ok is false when they never do.
func cutTopP(c []candidate, p, peak, sum float32) (kept []candidate, ok bool) {
	var cum float32
	for i, x := range c {
		cum += float32(expShift(x.logit, peak)) / sum
		if cum >= p {
			return c[:i+1], true
		}
	}
	return c, false
}

// minP keeps the tokens whose probability is at least p times the largest,
// that is whose logit is at least peak + ln p. The best token always passes.
// sorted says c is in rank order, which lets the scan stop early.
func minP(c []candidate, p float32, sorted bool) []candidate {
	if p <= 0 || len(c) == 0 {
		return c
	}
	peak := c[0].logit
	if !sorted {
		for _, x := range c {
			peak = float32(math.Max(float64(peak), float64(x.logit)))
		}
	}
	limit := peak + float32(math.Log(float64(p)))
	if sorted {
		n := 1
		for n < len(c) && c[n].logit >= limit {
			n++
		}
		return c[:n]
	}
	kept := c[:0]
	for _, x := range c {
		if x.logit >= limit {
			kept = append(kept, x)
		}
	}
	return kept
}

package synth

// prng is splitmix64: tiny, fast and good enough for synthetic weights.
// Every row gets its own stream, derived from the seed, tensor and row, so
// rows can be generated in any order and on any goroutine.
type prng struct{ s uint64 }

func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func newRowPRNG(seed uint64, tensor, row int) prng {
	return prng{s: mix64(seed^mix64(uint64(tensor)<<32|uint64(uint32(row)))) + uint64(row)>>32}
}

func (p *prng) next() uint64 {
	p.s += 0x9e3779b97f4a7c15
	return mix64(p.s)
}

// weightScale bounds every weight: |w| < weightScale, as in the shared
// synthetic models.
const weightScale = 0.03125

// fillWeights fills dst with ±scale·a·b for a, b uniform on [0, 1): a
// density peaked at zero with a long thin tail, like trained weights
// (Laplace-like). Only float32 products are used, so every platform gives
// the same bits.
func (p *prng) fillWeights(dst []float32) {
	const unit = 1.0 / (1 << 24)
	for i := range dst {
		u := p.next()
		a := float32(u>>40) * unit
		b := float32(u>>16&0xffffff) * unit
		w := weightScale * a * b
		if u&1 != 0 {
			w = -w
		}
		dst[i] = w
	}
}

//go:build !purego

package simd

import "sync"

// The wide F16 GEMM (AVX-512; codegen gemm_f16_wide.go) computes the F16
// tiles' sums bit for bit: one eight-lane accumulator per (row, token)
// pair taking the values eight at a time in order, FMA after FMA, reduced
// as storeGrid reduces. It widens its operands to float32 once instead
// of once per use: a k-block of each group of wideToks tokens once for
// every 32 rows, and a k-block of the weights once for every token (the
// first token group's "in" tiles widen it as they stream it from memory
// and keep it for the others). A zmm accumulator holds two tokens' pairs
// for one row, so each FMA does the work of two ymm ones. The
// accumulators stay in scratch memory from one k-block to the next (a
// float32 store and load changes no bits).

// f16WideTile adds ns steps of eight values of rgs groups of 4 widened
// weight rows (wf, f16WideWRow floats apart) times P token pairs (a,
// [step][pair][16]) into the accumulators at acc ([group][row][pair][16];
// zeroed first if zero); tiles[P-1] takes P pairs. The "in" tiles first
// widen the rows from w16 (binary16, w16Stride bytes apart) into wf.
type f16WideTile = func(ns int, w16 *byte, w16Stride int, wf *float32, a *float32, acc *float32, zero bool, rgs int)

// widenPairFunc widens ns chunks of eight binary16 values from each of
// src0 and src1, chunk i to dst[i·dstStride/4:] and the 8 floats after.
type widenPairFunc = func(ns int, src0, src1 *byte, dst *float32, dstStride int)

const (
	wideRows   = 32 // weight rows widened at once: the executor's tile
	widePairs  = 6  // token pairs of the largest tile
	wideToks   = 2 * widePairs
	wideSuper  = 16 * wideToks // tokens whose accumulators are held at once
	wideAccLen = gemmRows * widePairs * 16
	// Below these sizes the widening does not pay for itself (attention's
	// head dimensions, a few heads as tokens); the gemmF16 tiles, which
	// give the same bits, take those products.
	wideMinN    = 256
	wideMinToks = 6
)

// wideScratch is one call's widened operands and accumulators.
type wideScratch struct {
	w   [wideRows * f16WideWRow]float32
	a   [wideToks * f16WideK]float32
	acc [wideRows / gemmRows * wideSuper / wideToks * wideAccLen]float32
}

// wideZeros stands in for the missing token of an odd count.
var wideZeros [2 * f16WideK]byte

var widePool = sync.Pool{New: func() any { return new(wideScratch) }}

// wrapGemmF16Wide returns the F16 GemmFunc built on the wide tiles; other
// shapes go to small (the gemmF16 tiles), and the rows past the last whole
// group of gemmRows to the dot kernel, as there.
func wrapGemmF16Wide(tiles, in []f16WideTile, widenPair widenPairFunc, small GemmFunc, dot DotFunc) GemmFunc {
	return func(n int, w []byte, wRowBytes, nRows int, a []byte, aRowBytes, nTok int, dst []float32, dstStride int) {
		if n%16 != 0 || n < wideMinN || nTok < wideMinToks || nRows < gemmRows || len(tiles) != widePairs || len(in) != widePairs {
			small(n, w, wRowBytes, nRows, a, aRowBytes, nTok, dst, dstStride)
			return
		}
		// Reslice to the exact extent, as wrapGemm does: short buffers
		// panic here, before any kernel reads past them.
		w = w[:(nRows-1)*wRowBytes+2*n]
		a = a[:(nTok-1)*aRowBytes+2*n]
		dst = dst[:(nTok-1)*dstStride+nRows]
		full := nRows - nRows%gemmRows
		s := widePool.Get().(*wideScratch)
		g := wideGemm{s: s, tiles: tiles, in: in, widenPair: widenPair, n: n, w: w, wRow: wRowBytes, a: a, aRow: aRowBytes, dst: dst, dstStride: dstStride}
		for r0 := 0; r0 < full; r0 += wideRows {
			for t0 := 0; t0 < nTok; t0 += wideSuper {
				g.block(r0, min(wideRows, full-r0), t0, min(wideSuper, nTok-t0))
			}
		}
		widePool.Put(s)
		for r := full; r < nRows; r++ {
			for t := range nTok {
				dst[t*dstStride+r] = dot(n, w[r*wRowBytes:], a[t*aRowBytes:])
			}
		}
	}
}

// wideGemm is one call's operands.
type wideGemm struct {
	s          *wideScratch
	tiles, in  []f16WideTile
	widenPair  widenPairFunc
	n          int
	w, a       []byte
	wRow, aRow int
	dst        []float32
	dstStride  int
}

// block computes rows [r0, r0+nr) (a multiple of gemmRows) against tokens
// [t0, t0+nt), over the whole length in k-blocks.
func (g *wideGemm) block(r0, nr, t0, nt int) {
	s := g.s
	groups := (nt + wideToks - 1) / wideToks
	rgs := nr / gemmRows
	for k0 := 0; k0 < g.n; k0 += f16WideK {
		ns := min(f16WideK, g.n-k0) / 8
		for gi := range groups {
			tg := t0 + gi*wideToks
			tt := min(wideToks, t0+nt-tg)
			pairs := (tt + 1) / 2
			for p := range pairs {
				src1 := &wideZeros[0] // the missing token of an odd count
				if 2*p+1 < tt {
					src1 = &g.a[(tg+2*p+1)*g.aRow+2*k0]
				}
				g.widenPair(ns, &g.a[(tg+2*p)*g.aRow+2*k0], src1, &s.a[p*16], 64*pairs)
			}
			// The first group widens this block of weights for the others.
			tile := g.tiles[pairs-1]
			if gi == 0 {
				tile = g.in[pairs-1]
			}
			tile(ns, &g.w[r0*g.wRow+2*k0], g.wRow, &s.w[0], &s.a[0], &s.acc[gi*rgs*wideAccLen], k0 == 0, rgs)
		}
	}
	for gi := range groups {
		tg := t0 + gi*wideToks
		tt := min(wideToks, t0+nt-tg)
		pairs := (tt + 1) / 2
		for rg := range rgs {
			acc := s.acc[gi*rgs*wideAccLen+rg*gemmRows*pairs*16:]
			for r := range gemmRows {
				for i := range tt {
					o := (r*pairs+i/2)*16 + (i%2)*8
					lanes := (*[8]float32)(acc[o : o+8])
					g.dst[(tg+i)*g.dstStride+r0+rg*gemmRows+r] = reduce8(lanes)
				}
			}
		}
	}
}

// reduce8 sums eight lanes as storeGrid's reduce4 does: the two halves
// lane by lane, then lanes (0+2)+(1+3). Go rounds every float32 addition.
func reduce8(l *[8]float32) float32 {
	h0, h1, h2, h3 := l[0]+l[4], l[1]+l[5], l[2]+l[6], l[3]+l[7]
	return (h0 + h2) + (h1 + h3)
}

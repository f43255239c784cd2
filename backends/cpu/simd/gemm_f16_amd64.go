//go:build !purego

package simd

import "sync"

// The wide F16 GEMM (AVX-512; codegen gemm_f16_wide.go) computes the
// AVX-512 F16 tiles' sums bit for bit, tinyBLAS<16>'s order: one
// sixteen-lane accumulator per (row, token) pair taking the values sixteen
// at a time in order, FMA after FMA, reduced as _mm512_reduce_add_ps. It
// widens its operands to float32 once instead of once per use: a k-block
// of each group of wideToks tokens once for every 32 rows, and a k-block
// of the weights once for every token (the first token group's "in" tiles
// widen it as they stream it from memory and keep it for the others). The
// accumulators stay in scratch memory from one k-block to the next (a
// float32 store and load changes no bits); the last k-block's tiles reduce
// them (in assembly: reducing in Go cost a sixth of the GEMM's time).

// f16WideTile adds ns steps of sixteen values of rgs groups of 4 widened
// weight rows (wf, f16WideWRow floats apart) times T tokens (a,
// [step][token][16]) into the accumulators at acc ([group][row][token][16];
// zeroed first if zero); tiles[T-1] takes T tokens. The "in" tiles first
// widen the rows from w16 (binary16, w16Stride bytes apart) into wf. With
// dst set (the last k-block) a tile reduces the accumulators as
// _mm512_reduce_add_ps and stores group g's row r for token t at
// dst[t·dstStride/4 + 4g + r] instead of storing them.
type f16WideTile = func(ns int, w16 *byte, w16Stride int, wf *float32, a *float32, acc *float32, zero bool, rgs int, dst *float32, dstStride int)

// widenFunc widens ns chunks of sixteen binary16 values from src, chunk i
// to dst[i·dstStride/4:].
type widenFunc = func(ns int, src *byte, dst *float32, dstStride int)

const (
	wideRows   = 32            // weight rows widened at once: the executor's tile
	wideToks   = 6             // tokens of the largest tile
	wideSuper  = 16 * wideToks // tokens whose accumulators are held at once
	wideAccLen = gemmRows * wideToks * 16
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

var widePool = sync.Pool{New: func() any { return new(wideScratch) }}

// wrapGemmF16Wide returns the F16 GemmFunc built on the wide tiles; other
// shapes go to small (the gemmF16 tiles), and the rows past the last whole
// group of gemmRows to the dot kernel, as there.
func wrapGemmF16Wide(tiles, in []f16WideTile, widen widenFunc, small GemmFunc, dot DotFunc) GemmFunc {
	return func(n int, w []byte, wRowBytes, nRows int, a []byte, aRowBytes, nTok int, dst []float32, dstStride int) {
		if n%16 != 0 || n < wideMinN || nTok < wideMinToks || nRows < gemmRows || len(tiles) != wideToks || len(in) != wideToks {
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
		g := wideGemm{s: s, tiles: tiles, in: in, widen: widen, n: n, w: w, wRow: wRowBytes, a: a, aRow: aRowBytes, dst: dst, dstStride: dstStride}
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
	widen      widenFunc
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
		ns := min(f16WideK, g.n-k0) / 16
		last := k0+f16WideK >= g.n
		for gi := range groups {
			tg := t0 + gi*wideToks
			tt := min(wideToks, t0+nt-tg)
			for i := range tt {
				g.widen(ns, &g.a[(tg+i)*g.aRow+2*k0], &s.a[i*16], 64*tt)
			}
			// The first group widens this block of weights for the others.
			tile := g.tiles[tt-1]
			if gi == 0 {
				tile = g.in[tt-1]
			}
			var dst *float32
			if last {
				dst = &g.dst[tg*g.dstStride+r0]
			}
			tile(ns, &g.w[r0*g.wRow+2*k0], g.wRow, &s.w[0], &s.a[0], &s.acc[gi*rgs*wideAccLen], k0 == 0, rgs, dst, 4*g.dstStride)
		}
	}
}

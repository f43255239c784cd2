package ref

import "math"

// kvPad is llama.cpp's KV-cache padding without flash attention: attention
// runs over the first n_kv cells, n_kv rounded up to a multiple of 32, with
// the cells past the last position masked. The padding only changes which
// summation path the dot products take, and this package mirrors that.
const kvPad = 32

// AttentionScratch returns the number of float32 elements Attention needs
// in scratch for nTok query tokens starting at position pos0.
func AttentionScratch(nTok, pos0 int) int {
	n := paddedKV(pos0 + nTok)
	return nTok*n + n
}

func paddedKV(n int) int { return (n + kvPad - 1) / kvPad * kvPad }

// Attention computes causal grouped-query attention for nTok query tokens at
// positions pos0, pos0+1, … against cache rows [0, pos0+nTok) of k and v
// (the caller has stored the new tokens' rows already). q and out are
// [nTok][nHead·headDim]; query head h reads KV head h/(nHead/nKVHead).
// Scores are multiplied by scale before the softmax; token t sees positions
// up to pos0+t.
//
// The numerics follow llama.cpp's attention without flash attention. With
// an F16 cache, Q is rounded to binary16 for Q·Kᵀ and the probabilities are
// rounded to binary16 for P·V; with an F32 cache everything stays float32.
// Dot products use the summation order of the path ggml picks (tinyBLAS for
// batches of 2+ tokens, ggml_vec_dot for one token).
//
// Preconditions: len(q), len(out) >= nTok·nHead·headDim; nKVHead divides
// nHead; k and v hold pos0+nTok rows of RowLen >= nKVHead·headDim and are
// both F16 or both F32; len(scratch) >= AttentionScratch(nTok, pos0).
func Attention(out, q []float32, k, v KV, nTok, pos0, nHead, nKVHead, headDim int, scale float32, scratch []float32) {
	AttentionWith(out, q, k, v, nTok, pos0, nHead, nKVHead, headDim, scale, AttnOptions{}, scratch)
}

// AttnOptions are the variations of attention some architectures use.
type AttnOptions struct {
	// Window is a sliding window (llama.cpp's SWA mask): token t at
	// position p sees only positions p-Window+1 … p, the others' scores
	// are -∞ before the softmax; 0 sees them all.
	Window int
	// SoftCap, when positive, caps every score s as SoftCap·tanh(s/SoftCap)
	// before the scale and the softmax (Gemma 2's attention logit
	// soft-capping, in ggml's float32 steps: ·(1/SoftCap), tanh, ·SoftCap).
	SoftCap float32
	// F32Acc (FlashAttention only) keeps the accumulator in float32 with a
	// binary16 V too: each V row widened exactly, then ggml's float32
	// steps (ggml_vec_scale_f32, ggml_vec_mad_f32), as llama.cpp does for
	// a quantized V and ik_llama.cpp for every V. It is not llama.cpp's
	// -fa numerics with a binary16 V (that rounds the accumulator to
	// binary16 at every cell): weft's opt-in (--flash-acc f32), faster
	// on the CPU, whose deviation from the references is measured.
	F32Acc bool
}

// SoftCap is ggml's soft-capping of x: scale by 1/cap, tanh, scale by cap,
// each rounded to float32.
func SoftCap(x, cap float32) float32 {
	return float32(math.Tanh(float64(x*(1/cap)))) * cap
}

// SoftCapRow soft-caps every element of x into dst (see SoftCap).
func SoftCapRow(dst, x []float32, cap float32) {
	for i, v := range x {
		dst[i] = SoftCap(v, cap)
	}
}

// AttentionWith is Attention with the options o.
func AttentionWith(out, q []float32, k, v KV, nTok, pos0, nHead, nKVHead, headDim int, scale float32, o AttnOptions, scratch []float32) {
	nKV := pos0 + nTok
	nPad := paddedKV(nKV)
	probs := scratch[:nTok*nPad]
	column := scratch[nTok*nPad : nTok*nPad+nPad]
	group := nHead / nKVHead
	for h := 0; h < nHead; h++ {
		kvOff := h / group * headDim
		for t := 0; t < nTok; t++ {
			slot := (t*nHead + h) * headDim
			row := probs[t*nPad : (t+1)*nPad]
			first := 0
			if o.Window > 0 {
				first = max(0, pos0+t+1-o.Window)
			}
			scores(row, q[slot:slot+headDim], out[slot:slot+headDim], k, kvOff, first, pos0+t+1, nTok, scale, o.SoftCap)
		}
		for d := 0; d < headDim; d++ {
			gatherColumn(column, v, kvOff+d, nKV)
			for t := 0; t < nTok; t++ {
				slot := (t*nHead+h)*headDim + d
				out[slot] = dotPV(probs[t*nPad:(t+1)*nPad], column, v.isF16(), nTok)
			}
		}
	}
}

// scores fills row with the softmax probabilities of one query head against
// positions [first, visible) of k (the rest of row gets 0). tmp (headDim
// elements of the output, overwritten later) holds the f16-rounded query.
func scores(row, qh, tmp []float32, k KV, kvOff, first, visible, nTok int, scale, softCap float32) {
	headDim := len(qh)
	if k.isF16() {
		for i, x := range qh {
			tmp[i] = roundHalf(x)
		}
		tiny := nTok >= 2 && headDim%lanes == 0
		for p := 0; p < visible; p++ {
			kr := k.F16[p*k.RowLen+kvOff : p*k.RowLen+kvOff+headDim]
			row[p] = capScore(dotHalf(tmp, kr, tiny), softCap) * scale
		}
	} else {
		for p := 0; p < visible; p++ {
			kr := k.F32[p*k.RowLen+kvOff : p*k.RowLen+kvOff+headDim]
			row[p] = capScore(vecDotF32(qh, kr), softCap) * scale
		}
	}
	for p := visible; p < len(row); p++ {
		row[p] = float32(math.Inf(-1))
	}
	for p := range first {
		row[p] = float32(math.Inf(-1)) // outside the sliding window
	}
	SoftmaxRowWith(row, 1, GoSoftmax()) // already scaled; x·1 = x
	if k.isF16() {
		for p := range row[:visible] {
			row[p] = roundHalf(row[p])
		}
	}
}

// capScore soft-caps a score when cap is positive.
func capScore(x, cap float32) float32 {
	if cap > 0 {
		return SoftCap(x, cap)
	}
	return x
}

// gatherColumn copies element i of the first n rows of c into column and
// zeroes the padding after them.
func gatherColumn(column []float32, c KV, i, n int) {
	if c.F16 != nil {
		for p := range column[:n] {
			column[p] = halfToFloat(c.F16[p*c.RowLen+i])
		}
	} else {
		for p := range column[:n] {
			column[p] = c.F32[p*c.RowLen+i]
		}
	}
	clear(column[n:])
}

// dotPV is one output element of P·V, over the padded cell count.
func dotPV(p, column []float32, f16 bool, nTok int) float32 {
	switch {
	case nTok >= 2:
		return tinyDot(p, column)
	case f16:
		return vecDotF16(p, column)
	default:
		return vecDotF32(p, column)
	}
}

// SeqRun is a run of a batch's tokens of one sequence: batch tokens
// [Start, Start+N) are sequence Seq's positions Pos, Pos+1, ….
type SeqRun struct{ Seq, Start, N, Pos int }

// AttentionSeqs is Attention for a batch holding the tokens of several
// independent sequences: k[s] and v[s] are sequence s's caches (the
// caller has stored every run's rows already), and the tokens of each run
// attend to their own sequence's positions 0..Pos+t only. q and out are
// [tokens][nHead·headDim] for the whole batch. Each run is computed as
// Attention computes a batch of that run alone, so a sequence's result
// does not depend on the other sequences of the batch.
//
// Preconditions: those of Attention for every run, with len(scratch) >=
// AttentionScratch(r.N, r.Pos) for the largest.
func AttentionSeqs(out, q []float32, k, v []KV, runs []SeqRun, nHead, nKVHead, headDim int, scale float32, scratch []float32) {
	w := nHead * headDim
	for _, r := range runs {
		lo, hi := r.Start*w, (r.Start+r.N)*w
		Attention(out[lo:hi], q[lo:hi], k[r.Seq], v[r.Seq], r.N, r.Pos, nHead, nKVHead, headDim, scale, scratch)
	}
}

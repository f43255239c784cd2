package simd

import "github.com/weft-ml/weft/ops/ref"

// ropePairsKernel and ropeNeoXKernel rotate one token's nh heads (stride
// bytes apart at x) over nc chunks of lanes floats (adjacent pairs) or
// lanes pairs (NeoX, the second of a pair half bytes after the first, the
// sines half bytes after the cosines), codegen rope.go.
type (
	ropePairsKernel = func(nh int, x *float32, stride int, nc int, cs *float32)
	ropeNeoXKernel  = func(nh int, x *float32, stride int, nc int, half int, cs *float32)
)

// ropeStack is the angles a RoPE table keeps on the stack (ref.RoPE.Apply's
// limit too); wider rotations allocate.
const ropeStack = 512

// RoPETable writes position pos's angles for r into tab (len(tab) >=
// r.Dims) in the layout RoPERotate reads: ref.RoPE.CosSin's (cos and sin
// of each pair side by side) for adjacent pairs; for NeoX pairs every
// cosine first, then every sine. A table depends only on r and pos, so one
// serves every layer that rotates with the same r.
func RoPETable(r ref.RoPE, pos int32, tab []float32) {
	tab = tab[:r.Dims]
	if !r.NeoX {
		r.CosSin(pos, tab)
		return
	}
	var buf [ropeStack]float32
	cs := buf[:]
	if r.Dims > ropeStack {
		cs = make([]float32, r.Dims)
	}
	r.CosSin(pos, cs)
	half := r.Dims / 2
	for i := range half {
		tab[i], tab[half+i] = cs[2*i], cs[2*i+1]
	}
}

// RoPERotate rotates one token's nHeads heads in place (x[h·headDim:],
// headDim floats each) by the angles RoPETable wrote for r: the bits of
// ref.RoPE.Rotate. Rotations whose pairs are not whole vectors, and the
// Unfused arithmetic, go to ops/ref.
func RoPERotate(r ref.RoPE, x []float32, nHeads, headDim int, tab []float32) {
	x, tab = x[:nHeads*headDim], tab[:r.Dims] // out of range: panic here, not in the kernel
	lanes, half := active.lanes, r.Dims/2
	switch {
	case nHeads == 0 || r.Dims == 0:
		return
	case r.Unfused || active.ropePairs == nil || r.Dims > headDim:
	case !r.NeoX && r.Dims%lanes == 0:
		active.ropePairs(nHeads, &x[0], 4*headDim, r.Dims/lanes, &tab[0])
		return
	case r.NeoX && half%lanes == 0:
		active.ropeNeoX(nHeads, &x[0], 4*headDim, half/lanes, 4*half, &tab[0])
		return
	}
	cs := tab
	if r.NeoX {
		var buf [ropeStack]float32
		cs = buf[:]
		if r.Dims > ropeStack {
			cs = make([]float32, r.Dims)
		}
		for i := range half {
			cs[2*i], cs[2*i+1] = tab[i], tab[half+i]
		}
	}
	r.Rotate(x, nHeads, headDim, cs)
}

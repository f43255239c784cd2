package cpu

import (
	"slices"

	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/ops/ref"
)

// ropeGrain is the fewest tokens a thread rotates: a token's rotation is
// about 0.1 µs, its table a microsecond.
const ropeGrain = 8

// runRoPE rotates every token's heads by its position's angles. The
// angles depend only on the rotation's parameters and the position, so a
// step computes each position's table once (ropeTablesFor) for all the
// layers' Q and K rotations (44 nodes a token for TinyLlama), and the
// rotation itself is a vector kernel with ref.RoPE.Rotate's bits.
func runRoPE(s *State, v *value) error {
	a := v.node.Attrs
	var factors []float32
	if len(v.node.Inputs) == 3 {
		factors = s.f32(s.input(v, 2))
	}
	r := ops.RoPEOf(a, factors)
	pos := s.ints[v.node.Inputs[1]]
	s.jobs.rope = ropeJob{r: r, dst: s.f32(v), src: s.f32(s.input(v, 0)), width: v.width,
		heads: a.Int("heads"), headDim: a.Int("head_dim"), tabs: s.ropeTablesFor(r, pos)}
	parallelFor(len(pos), s.p.threads, ropeGrain, &s.jobs.rope)
	return nil
}

// ropeJob rotates tokens [lo, hi): each token's row of src copied to dst
// and rotated there by its table (r.Dims floats a token in tabs).
type ropeJob struct {
	r                     ref.RoPE
	dst, src, tabs        []float32
	width, heads, headDim int
}

func (j *ropeJob) run(_, lo, hi int) {
	for t := lo; t < hi; t++ {
		row := j.dst[t*j.width : (t+1)*j.width]
		copy(row, j.src[t*j.width:(t+1)*j.width])
		simd.RoPERotate(j.r, row, j.heads, j.headDim, j.tabs[t*j.r.Dims:(t+1)*j.r.Dims])
	}
}

// ropeTables is one rotation's tables for the positions it was last asked
// for.
type ropeTables struct {
	key  ropeKey
	pos  []int32
	tabs []float32 // r.Dims floats a position (simd.RoPETable)
}

// ropeKey is what a rotation's angles depend on besides the position; the
// factors are a weight, named by where they live.
type ropeKey struct {
	dims                               int
	base, freqScale, extFactor, attnFa float32
	corr                               [2]float32
	neox, unfused                      bool
	factors                            *float32
	nFactors                           int
}

func keyOf(r ref.RoPE) ropeKey {
	k := ropeKey{dims: r.Dims, base: r.Base, freqScale: r.FreqScale, extFactor: r.ExtFactor, attnFa: r.AttnFactor,
		corr: r.CorrDims, neox: r.NeoX, unfused: r.Unfused, nFactors: len(r.Factors)}
	if len(r.Factors) > 0 {
		k.factors = &r.Factors[0]
	}
	return k
}

// ropeTablesFor returns r's tables for pos, computed (in parallel) unless
// the last call with r's parameters was for the same positions: within a
// step every layer asks for the same ones.
func (s *State) ropeTablesFor(r ref.RoPE, pos []int32) []float32 {
	key := keyOf(r)
	i := slices.IndexFunc(s.ropes, func(t ropeTables) bool { return t.key == key })
	if i < 0 {
		s.ropes = append(s.ropes, ropeTables{key: key})
		i = len(s.ropes) - 1
	}
	t := &s.ropes[i]
	if t.pos != nil && slices.Equal(t.pos, pos) {
		return t.tabs
	}
	t.pos = append(t.pos[:0], pos...)
	t.tabs = slices.Grow(t.tabs[:0], len(pos)*r.Dims)[:len(pos)*r.Dims]
	s.jobs.ropeTable = ropeTableJob{r: r, pos: pos, tabs: t.tabs}
	parallelFor(len(pos), s.p.threads, ropeGrain, &s.jobs.ropeTable)
	return t.tabs
}

// ropeTableJob writes the tables of positions [lo, hi).
type ropeTableJob struct {
	r    ref.RoPE
	pos  []int32
	tabs []float32
}

func (j *ropeTableJob) run(_, lo, hi int) {
	for k := lo; k < hi; k++ {
		simd.RoPETable(j.r, j.pos[k], j.tabs[k*j.r.Dims:(k+1)*j.r.Dims])
	}
}

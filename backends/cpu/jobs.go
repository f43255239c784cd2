package cpu

import (
	"github.com/weft-ml/weft/backends/cpu/simd"
	"github.com/weft-ml/weft/gguf"
)

// jobs holds one reusable job of each kind. A State runs one node at a
// time, so each kernel fills in its job and hands it to parallelFor
// without allocating.
type jobs struct {
	quant     quantJob
	pack      packJob
	tiles     tilesJob
	qkv       qkvJob
	gateUp    gateUpJob
	norm      normJob
	add       addJob
	bias      biasJob
	attn      attnJob
	store     storeJob
	rope      ropeJob
	ropeTable ropeTableJob
}

// quantJob converts activation rows to a weight's dot-product type.
type quantJob struct {
	quantize   simd.QuantFunc
	xs         []float32
	act        []byte
	cols, aRow int
}

func (j *quantJob) run(_, lo, hi int) {
	for t := lo; t < hi; t++ {
		j.quantize(j.xs[t*j.cols:(t+1)*j.cols], j.act[t*j.aRow:(t+1)*j.aRow])
	}
}

// packJob rearranges Q8_0 activation rows for the packed-weight kernels.
type packJob struct {
	wt              gguf.TensorType
	act, pact       []byte
	cols, aRow, nTk int
}

func (j *packJob) run(_, lo, hi int) {
	for t := lo; t < hi; t++ {
		simd.PackActRow(j.wt, j.act[t*j.aRow:(t+1)*j.aRow], j.cols, t, j.nTk, j.pact)
	}
}

// tilesJob multiplies tiles of one weight into dst (row stride m.rows).
type tilesJob struct {
	m    *matmulPart
	nTok int
	dst  []float32
}

func (j *tilesJob) run(_, lo, hi int) {
	for k := lo; k < hi; k++ {
		j.m.tile(k, j.nTok, j.dst[k*matmulTile:], j.m.rows)
	}
}

// qkvJob shares the tiles of several weights among the threads; part i's
// [T, rows] result starts at offs[i] in buf, and first[i] is its first
// global tile index.
type qkvJob struct {
	parts       []matmulPart
	first, offs []int
	nTok        int
	buf         []float32
}

func (j *qkvJob) run(_, lo, hi int) {
	for k := lo; k < hi; k++ {
		i := 0
		for j.first[i+1] <= k {
			i++
		}
		m := &j.parts[i]
		r0 := (k - j.first[i]) * matmulTile
		m.tile(k-j.first[i], j.nTok, j.buf[j.offs[i]+r0:], m.rows)
	}
}

// gateUpJob computes dst = act(gate)·up one tile at a time.
type gateUpJob struct {
	s        *State
	act      func(dst, x []float32) // simd.SiLU or simd.GELU
	gate, up *matmulPart
	nTok     int
	dst      []float32
}

func (j *gateUpJob) run(w, lo, hi int) {
	tmp, rows := j.s.tileScratch(w), j.up.rows
	for k := lo; k < hi; k++ {
		r0, r1 := j.gate.tile(k, j.nTok, j.dst[k*matmulTile:], rows)
		j.up.tile(k, j.nTok, tmp, matmulTile)
		for t := 0; t < j.nTok; t++ {
			row := j.dst[t*rows+r0 : t*rows+r1]
			j.act(row, row)
			simd.Mul(row, row, tmp[t*matmulTile:t*matmulTile+r1-r0])
		}
	}
}

// addJob adds the residual to each tile of products; dst may alias res.
type addJob struct {
	s        *State
	m        *matmulPart
	nTok     int
	dst, res []float32
}

func (j *addJob) run(w, lo, hi int) {
	tmp, m := j.s.tileScratch(w), j.m
	for k := lo; k < hi; k++ {
		r0, r1 := m.tile(k, j.nTok, tmp, matmulTile)
		for t := 0; t < j.nTok; t++ {
			simd.Add(j.dst[t*m.rows+r0:t*m.rows+r1], tmp[t*matmulTile:t*matmulTile+r1-r0], j.res[t*m.rows+r0:t*m.rows+r1])
		}
	}
}

// biasJob computes tiles of products in place and adds the bias row.
type biasJob struct {
	m         *matmulPart
	nTok      int
	dst, bias []float32
}

func (j *biasJob) run(_, lo, hi int) {
	m := j.m
	for k := lo; k < hi; k++ {
		r0, r1 := m.tile(k, j.nTok, j.dst[k*matmulTile:], m.rows)
		for t := 0; t < j.nTok; t++ {
			row := j.dst[t*m.rows+r0 : t*m.rows+r1]
			simd.Add(row, row, j.bias[r0:r1])
		}
	}
}

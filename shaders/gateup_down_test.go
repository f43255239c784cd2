//go:build linux && (amd64 || arm64)

package shaders_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/gguf"
)

// The tiled gate·ups that also write the FFN down's activations
// (matmul_tiled_gateup_T_q8_0, _q8_1: devices without int8 tensor cores,
// lavapipe among them) write the plain variant's values and the bits
// quantize_q8_0/q8_1 gives them, on awkward shapes: rows of whole blocks
// but not whole tiles, token counts off the 64-token tile. The
// tensor-core ones are checked by TestMatMulCoopSameBitsAsTiled.
func TestTiledGateUpWritesDownActivations(t *testing.T) {
	e := newEnv(t)
	for _, wt := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ4_1, gguf.TypeQ5_1} {
		for _, c := range []struct{ rows, cols, ntok int }{{64, 256, 64}, {96, 512, 100}, {160, 256, 33}} {
			rawW, _ := e.weights(wt, c.rows, c.cols)
			rawU, _ := e.weights(wt, c.rows, c.cols)
			x := e.random(c.ntok * c.cols)
			const doff = 3
			wb, ub := e.buf(len(rawW), rawW), e.buf(len(rawU), rawU)
			xb, aoff := e.activations(wt, x, c.ntok, c.cols)
			push := pushWords(c.cols, c.rows, c.ntok, aoff, doff, 0, c.rows)
			name := "matmul_tiled_gateup_" + typeName(wt)
			db := e.out(doff + c.rows*c.ntok + 4)
			e.run(name, e.tileGrid(name, c.rows, c.ntok), push, wb, xb, db, ub)
			want := e.readAt(db, doff, c.rows*c.ntok)
			e.gateUpWithDownActivations(name, c.rows, c.ntok, want, []*vulkan.Buffer{wb, xb, nil, ub}, push)
		}
	}
}

// gateUpWithDownActivations runs gate·up kernel name's variants that also
// write the FFN down's Q8_0 and Q8_1 activations (the 32-value block
// types have them; bufs: weights,
// activations, an unused slot for d, up weights; push: the plain
// variant's) and requires the values want (the plain variant's) and the
// bits quantize_q8_0/q8_1 gives them.
func (e *env) gateUpWithDownActivations(name string, rows, ntok int, want []float32, bufs []*vulkan.Buffer, push []byte) {
	const doff, woff, qoff = 3, 7, 2
	for _, act := range []struct {
		name string
		bw   int
	}{{"q8_0", 9}, {"q8_1", 10}} {
		kern := name + "_" + act.name
		if !e.runs(kern) {
			e.t.Errorf("%s: no such variant on %s", kern, e.d.Info().Name)
			continue
		}
		words := ntok * rows / 32 * act.bw
		wb := e.place(woff, want)
		qwant := e.out(qoff + words)
		e.run("quantize_"+act.name, [3]uint32{3, 1, 1}, pushWords(rows, ntok, woff, qoff), wb, qwant)
		db, qgot := e.out(doff+len(want)+4), e.out(qoff+words+3)
		b := append([]*vulkan.Buffer(nil), bufs...)
		b[2] = db
		b = append(b, qgot)
		e.run(kern, e.tileGrid(kern, rows, ntok), append(push, pushWords(qoff)...), b...)
		require.Equal(e.t, f32Bits(want), f32Bits(e.readAt(db, doff, len(want))), "%s rows %d ntok %d: values", kern, rows, ntok)
		require.Equal(e.t, f32Bits(e.readAt(qwant, qoff, words)), f32Bits(e.readAt(qgot, qoff, words)), "%s rows %d ntok %d: activations", kern, rows, ntok)
	}
}

//go:build linux && (amd64 || arm64)

package shaders_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/ops/ref"
)

// attention_tiled.comp, attention_coop.comp and attention_cm2.comp take
// tiles of tokens that may belong to different sequences (continuous
// batching): here two sequences' tokens alternate in the batch, their
// cache rows are far apart, and the rows between them and after them were
// never written (NaN). Each token must see its own sequence's rows only, as
// attention.comp and ops/ref do.
func TestAttentionTiledMixesSequences(t *testing.T) {
	e := newEnv(t)
	const heads, kvHeads, hd, rows = 4, 2, 64, 100
	const w = kvHeads * hd
	seqs := []struct{ cell, pos0, ntok int }{{0, 20, 10}, {64, 5, 9}}
	for _, f16 := range []bool{true, false} {
		kind := map[bool]string{true: "f16", false: "f32"}[f16]
		elem := map[bool]int{true: 2, false: 4}[f16]
		kc, vc := nanCache(rows*w, f16), nanCache(rows*w, f16)
		var pos, cells []uint32
		var q, want []float32
		var order [][2]int // batch token → (sequence, its token)
		perSeq := make([][]float32, len(seqs))
		perQ := make([][]float32, len(seqs))
		for s, sq := range seqs {
			n := sq.pos0 + sq.ntok
			kr, vr := ref.KV{RowLen: w}, ref.KV{RowLen: w}
			if f16 {
				kr.F16, vr.F16 = make([]uint16, n*w), make([]uint16, n*w)
			} else {
				kr.F32, vr.F32 = make([]float32, n*w), make([]float32, n*w)
			}
			k, v := e.random(n*w), e.random(n*w)
			for p := 0; p < n; p++ {
				kr.Store(p, k[p*w:])
				vr.Store(p, v[p*w:])
			}
			copy(kc[sq.cell*w*elem:], kvBytes(kr, f16))
			copy(vc[sq.cell*w*elem:], kvBytes(vr, f16))
			perQ[s] = e.random(sq.ntok * heads * hd)
			perSeq[s] = make([]float32, len(perQ[s]))
			scale := float32(1 / math.Sqrt(hd))
			ref.AttentionWith(perSeq[s], perQ[s], kr, vr, sq.ntok, sq.pos0, heads, kvHeads, hd, scale, ref.AttnOptions{}, make([]float32, ref.AttentionScratch(sq.ntok, sq.pos0)))
		}
		for i := 0; len(order) < seqs[0].ntok+seqs[1].ntok; i++ {
			for s, sq := range seqs {
				if i < sq.ntok {
					order = append(order, [2]int{s, i})
				}
			}
		}
		row := heads * hd
		for _, o := range order {
			sq := seqs[o[0]]
			pos = append(pos, uint32(sq.pos0+o[1]))
			cells = append(cells, uint32(sq.cell))
			q = append(q, perQ[o[0]][o[1]*row:(o[1]+1)*row]...)
			want = append(want, perSeq[o[0]][o[1]*row:(o[1]+1)*row]...)
		}
		ntok := len(order)
		const qoff, ooff, posoff = 5, 6, 1
		kb, vb := e.buf(len(kc), kc), e.buf(len(vc), vc)
		sb := e.words(append(pos, cells...), posoff)
		qb, ob := e.place(qoff, q), e.out(ooff+len(q)+2)
		scale := float32(1 / math.Sqrt(hd))
		kernels := map[string][3]uint32{
			"attention_" + kind:       {heads, uint32(ntok), 1},
			"attention_tiled_" + kind: {heads, uint32((ntok + 15) / 16), 1},
		}
		if f16 {
			for name, tq := range e.tensorCoreAttention(hd) {
				kernels[name] = [3]uint32{heads, uint32((ntok + tq - 1) / tq), 1}
			}
		}
		for name, grid := range kernels {
			e.run(name, grid, pushWords(heads, kvHeads, hd, ntok, qoff, ooff, posoff, scale, 0, posoff+ntok, 0, float32(0), float32(0)), qb, sb, kb, vb, ob)
			requireClose(t, fmt.Sprintf("%s, two sequences", name), e.readAt(ob, ooff, len(q)), want, attentionAbs(f16), attentionRel(f16))
		}
	}
}

// nanCache is a KV cache of n values, every one NaN: rows no kernel may read.
func nanCache(n int, f16 bool) []byte {
	if f16 {
		b := make([]byte, 0, 2*n)
		for range n {
			b = binary.LittleEndian.AppendUint16(b, 0x7e00)
		}
		return pad4(b)
	}
	b := make([]byte, 0, 4*n)
	for range n {
		b = binary.LittleEndian.AppendUint32(b, 0x7fc00000)
	}
	return b
}

// kvBytes is a reference cache's rows as the device stores them.
func kvBytes(kv ref.KV, f16 bool) []byte {
	if !f16 {
		return f32Bytes(kv.F32)
	}
	var b []byte
	for _, h := range kv.F16 {
		b = binary.LittleEndian.AppendUint16(b, h)
	}
	return b
}

// With an F16 cache every attention kernel rounds the probabilities to
// binary16 (to nearest, as the CPU does) before P·V. With one-hot V rows
// (row r holds 1 at dimension r) the output is those probabilities
// themselves, exactly (one nonzero product a sum), so the rounding shows:
// a device probability may differ from ops/ref's in the last float bits
// and round to the neighbouring binary16 value now and then, but
// truncating, or rounding the wrong way, moves about half of them.
func TestAttentionRoundsProbabilities(t *testing.T) {
	e := newEnv(t)
	const heads, kvHeads, hd, ntok = 2, 1, 64, 60
	w := kvHeads * hd
	k, q := e.random(ntok*w), e.random(ntok*heads*hd)
	for i := range q {
		q[i] *= 4 // a spread of probabilities, some tiny (binary16 subnormals)
	}
	v := make([]float32, ntok*w)
	for r := range ntok {
		v[r*w+r] = 1
	}
	kr, vr := ref.KV{RowLen: w, F16: make([]uint16, ntok*w)}, ref.KV{RowLen: w, F16: make([]uint16, ntok*w)}
	for p := range ntok {
		kr.Store(p, k[p*w:])
		vr.Store(p, v[p*w:])
	}
	scale := float32(1 / math.Sqrt(hd))
	want := make([]float32, len(q))
	ref.AttentionWith(want, q, kr, vr, ntok, 0, heads, kvHeads, hd, scale, ref.AttnOptions{}, make([]float32, ref.AttentionScratch(ntok, 0)))
	pos := make([]uint32, ntok)
	for i := range pos {
		pos[i] = uint32(i)
	}
	const qoff, ooff, posoff = 5, 6, 1
	kb, vb := e.buf(len(kvBytes(kr, true)), kvBytes(kr, true)), e.buf(len(kvBytes(vr, true)), kvBytes(vr, true))
	sb := e.words(append(pos, make([]uint32, ntok)...), posoff)
	qb := e.place(qoff, q)
	kernels := map[string][3]uint32{"attention_f16": {heads, ntok, 1}, "attention_tiled_f16": {heads, (ntok + 15) / 16, 1}}
	for name, tq := range e.tensorCoreAttention(hd) {
		kernels[name] = [3]uint32{heads, uint32((ntok + tq - 1) / tq), 1}
	}
	for name, grid := range kernels {
		ob := e.out(ooff + len(q) + 2)
		e.run(name, grid, pushWords(heads, kvHeads, hd, ntok, qoff, ooff, posoff, scale, 0, posoff+ntok, 0, float32(0), float32(0)), qb, sb, kb, vb, ob)
		got := e.readAt(ob, ooff, len(q))
		probs, moved := 0, 0
		for i, x := range want {
			if x == 0 {
				continue
			}
			probs++
			if got[i] != x {
				moved++
				// At most to a neighbouring binary16 value.
				require.InDelta(t, x, got[i], float64(x)/1024+6e-8, "%s: element %d", name, i)
			}
		}
		t.Logf("%s: %d of %d probabilities on the other binary16 neighbour", name, moved, probs)
		require.Greater(t, probs, 1000)
		require.Less(t, moved, probs/20, "%s: probabilities not rounded to nearest binary16", name)
	}
}

//go:build linux && (amd64 || arm64)

package shaders_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
	"github.com/weft-ml/weft/shaders"
)

// Operands sit at odd element offsets inside larger buffers, as they do in
// the executor's activation arena; the words around them stay NaN.

// place returns a buffer holding v at element offset off (NaN elsewhere).
func (e *env) place(off int, v []float32) *vulkan.Buffer {
	b := e.out(off + len(v) + 5)
	require.NoError(e.t, e.d.UploadF32(b, int64(off), v))
	return b
}

func (e *env) words(vals []uint32, off int) *vulkan.Buffer {
	b := e.out(off + len(vals) + 3)
	raw := make([]byte, 4*len(vals))
	for i, w := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], w)
	}
	require.NoError(e.t, e.d.Upload(b, 4*int64(off), raw))
	return b
}

func (e *env) readAt(b *vulkan.Buffer, off, n int) []float32 {
	v := make([]float32, n)
	require.NoError(e.t, e.d.DownloadF32(v, b, int64(off)))
	return v
}

// weights returns rows×cols random values as type wt's bytes and the
// values they decode to.
func (e *env) weights(wt gguf.TensorType, rows, cols int) ([]byte, []float32) {
	f := e.random(rows * cols)
	if lattice(wt) {
		raw := e.randomBlocks(wt, rows*cols)
		require.NoError(e.t, quant.Dequantize(wt, raw, f))
		return pad4(raw), f
	}
	raw, err := quant.QuantizeAlloc(wt, f)
	require.NoError(e.t, err)
	require.NoError(e.t, quant.Dequantize(wt, raw, f))
	return pad4(raw), f
}

// lattice reports the lattice and ternary types, whose weights are random
// blocks: quant cannot write the IQ1/IQ2/IQ3 types (their quantizers need
// an importance matrix), and random bytes reach every grid point, sign
// pattern, scale and ternary field (TQ2_0's field 3 too, which its
// quantizer never writes).
func lattice(t gguf.TensorType) bool {
	switch t {
	case gguf.TypeIQ2_XXS, gguf.TypeIQ2_XS, gguf.TypeIQ2_S, gguf.TypeIQ3_XXS, gguf.TypeIQ3_S,
		gguf.TypeIQ1_S, gguf.TypeIQ1_M, gguf.TypeTQ1_0, gguf.TypeTQ2_0:
		return true
	}
	return false
}

// withGrid appends the lattice table of type t (shaders.GridTable) to a
// dispatch's buffers when it has one.
func (e *env) withGrid(t gguf.TensorType, bufs ...*vulkan.Buffer) []*vulkan.Buffer {
	words, ok := shaders.GridTable(t)
	if !ok {
		return bufs
	}
	return append(bufs, e.words(words, 0))
}

// randomBlocks returns n values of type t as random bytes with each
// block's d a binary16 between 1e-3 and 0.1 (at the type's offset; IQ1_M
// spreads it over the top nibbles of its four scale words).
func (e *env) randomBlocks(t gguf.TensorType, n int) []byte {
	bb := int(t.BlockBytes())
	b := make([]byte, n/int(t.BlockSize())*bb)
	for i := range b {
		b[i] = byte(e.rng.Uint32())
	}
	for off := 0; off < len(b); off += bb {
		d := quant.FP32ToFP16(float32(e.rng.Float64()*0.1 + 1e-3))
		switch t {
		case gguf.TypeIQ1_M:
			for k := range 4 {
				x := b[off+49+2*k:]
				x[0] = x[0]&0x0f | byte(d>>(4*k))<<4
			}
		case gguf.TypeTQ1_0:
			binary.LittleEndian.PutUint16(b[off+52:], d)
		case gguf.TypeTQ2_0:
			binary.LittleEndian.PutUint16(b[off+64:], d)
		default:
			binary.LittleEndian.PutUint16(b[off:], d)
		}
	}
	return b
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

var weightTypes = []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ5_0,
	gguf.TypeQ4_1, gguf.TypeQ5_1, gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K,
	gguf.TypeIQ4_NL, gguf.TypeIQ4_XS,
	gguf.TypeIQ2_XXS, gguf.TypeIQ2_XS, gguf.TypeIQ2_S, gguf.TypeIQ3_XXS, gguf.TypeIQ3_S, gguf.TypeIQ1_S, gguf.TypeIQ1_M,
	gguf.TypeTQ1_0, gguf.TypeTQ2_0}

func typeName(t gguf.TensorType) string {
	return map[gguf.TensorType]string{gguf.TypeF32: "f32", gguf.TypeF16: "f16", gguf.TypeBF16: "bf16", gguf.TypeQ8_0: "q8_0", gguf.TypeQ4_0: "q4_0", gguf.TypeQ5_0: "q5_0",
		gguf.TypeQ4_1: "q4_1", gguf.TypeQ5_1: "q5_1", gguf.TypeQ2_K: "q2_k", gguf.TypeQ3_K: "q3_k", gguf.TypeQ4_K: "q4_k", gguf.TypeQ5_K: "q5_k", gguf.TypeQ6_K: "q6_k",
		gguf.TypeIQ4_NL: "iq4_nl", gguf.TypeIQ4_XS: "iq4_xs",
		gguf.TypeIQ2_XXS: "iq2_xxs", gguf.TypeIQ2_XS: "iq2_xs", gguf.TypeIQ2_S: "iq2_s", gguf.TypeIQ3_XXS: "iq3_xxs", gguf.TypeIQ3_S: "iq3_s",
		gguf.TypeIQ1_S: "iq1_s", gguf.TypeIQ1_M: "iq1_m", gguf.TypeTQ1_0: "tq1_0", gguf.TypeTQ2_0: "tq2_0"}[t]
}

// q8_1 reports the weight types that take Q8_1 activations (quantize_q8_1).
func q8_1(t gguf.TensorType) bool { return t == gguf.TypeQ4_1 || t == gguf.TypeQ5_1 }

// kQuant reports a K-quant (256-value super-blocks, Q8_K activations).
func kQuant(t gguf.TensorType) bool { return t.BlockSize() == 256 }

// hasKernel reports whether weights of type t have a shader of the family
// named by prefix ("matmul_", "matmul_tiled_"): matvec reads every type.
func hasKernel(prefix string, t gguf.TensorType) bool {
	_, err := shaders.Lookup(prefix + typeName(t))
	return err == nil
}

// GetRows widens rows as the CPU does (an int8 or nibble times a binary16
// scale is exact in float32; Q4_1/Q5_1's q·d + m rounds as in Go): the
// results must be bit-identical to ref.GetRows.
func TestGetRows(t *testing.T) {
	e := newEnv(t)
	for _, wt := range weightTypes {
		colsList := []int{32, 96, 288}
		if kQuant(wt) {
			colsList = []int{256, 768}
		}
		for _, cols := range colsList {
			const vocab = 37
			raw, _ := e.weights(wt, vocab, cols)
			ids := []int32{36, 0, 5, 5, 17, 2, 36}
			want := make([]float32, len(ids)*cols)
			require.NoError(t, ref.GetRows(want, raw, wt, cols, ids))
			idw := make([]uint32, len(ids))
			for i, id := range ids {
				idw[i] = uint32(id)
			}
			const idsoff, doff = 3, 7
			wb, sb, db := e.buf(len(raw), raw), e.words(idw, idsoff), e.out(doff+len(want)+9)
			name := "get_rows_" + typeName(wt)
			e.run(name, zSplit(e.rows(len(ids)), 2), pushWords(cols, len(ids), idsoff, 0, doff, 0, vocab), e.withGrid(wt, wb, sb, db)...)
			require.Equal(t, want, e.readAt(db, doff, len(want)), "%s cols=%d", name, cols)
			// The table in two buffers (a weight larger than the
			// storage-buffer range): rows [0, 20) and [20, 37).
			const cut = 20
			rb := len(raw) / vocab
			lo, hi := e.buf(cut*rb, raw[:cut*rb]), e.buf(len(raw)-cut*rb, raw[cut*rb:])
			db = e.out(doff + len(want) + 9)
			e.run(name, e.rows(len(ids)), pushWords(cols, len(ids), idsoff, 0, doff, 0, cut), e.withGrid(wt, lo, sb, db)...)
			e.run(name, zSplit(e.rows(len(ids)), 3), pushWords(cols, len(ids), idsoff, 0, doff, cut, vocab-cut), e.withGrid(wt, hi, sb, db)...)
			require.Equal(t, want, e.readAt(db, doff, len(want)), "%s cols=%d in two buffers", name, cols)
		}
	}
	// SelectRows: an F32 table inside a larger buffer.
	x := e.random(9 * 13)
	const woff = 11
	rows := []uint32{8, 0, 3}
	want := make([]float32, 0, len(rows)*13)
	for _, r := range rows {
		want = append(want, x[r*13:(r+1)*13]...)
	}
	xb, sb, db := e.place(woff, x), e.words(rows, 0), e.out(len(want))
	e.run("get_rows_f32", zSplit(e.rows(len(rows)), 2), pushWords(13, len(rows), 0, woff, 0, 0, 9), xb, sb, db)
	require.Equal(t, want, e.read(db, len(want)), "select rows")
}

// zSplit is groups with its rows' columns split over z workgroups
// (get_rows.comp's column chunks; one chunk is the whole row).
func zSplit(groups [3]uint32, z uint32) [3]uint32 {
	groups[2] = z
	return groups
}

// decodeQ8 reads quantize_q8_0's blocks (d as a float word, 8 words of
// int8) back into GGUF Q8_0 bytes.
func decodeQ8(words []uint32) []byte {
	var out []byte
	for b := 0; b+9 <= len(words); b += 9 {
		out = binary.LittleEndian.AppendUint16(out, quant.FP32ToFP16(math.Float32frombits(words[b])))
		for _, w := range words[b+1 : b+9] {
			out = binary.LittleEndian.AppendUint32(out, w)
		}
	}
	return out
}

// decodeQ8_1 reads quantize_q8_1's blocks (d and s as float words, 8 words
// of int8) back into GGUF Q8_1 bytes.
func decodeQ8_1(words []uint32) []byte {
	var out []byte
	for b := 0; b+10 <= len(words); b += 10 {
		for _, w := range words[b : b+2] {
			out = binary.LittleEndian.AppendUint16(out, quant.FP32ToFP16(math.Float32frombits(w)))
		}
		for _, w := range words[b+2 : b+10] {
			out = binary.LittleEndian.AppendUint32(out, w)
		}
	}
	return out
}

// Q8_0 and Q8_1 activation quantization must give exactly the CPU's blocks
// (the scale's division is corrected to round correctly; halves round away
// from zero; Q8_1's s is Σq times the unrounded d, rounded to binary16).
func TestQuantizeQ8(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ ntok, cols int }{{1, 32}, {3, 288}, {5, 2048}, {33, 2048}} {
		x := e.random(c.ntok * c.cols)
		for i := range x {
			x[i] *= 7
			if i%97 == 5 {
				x[i] = 0 // all-zero runs are rare; zeros are not
			}
		}
		for i := 64; i < 96 && i < len(x); i++ {
			x[i] = 0 // one all-zero block (d = 0)
		}
		for _, k := range []struct {
			name   string
			t      gguf.TensorType
			bytes  int // per block, GGUF
			words  int // per block, scratch
			decode func([]uint32) []byte
		}{{"quantize_q8_0", gguf.TypeQ8_0, 34, 9, decodeQ8}, {"quantize_q8_1", gguf.TypeQ8_1, 36, 10, decodeQ8_1}} {
			want := make([]byte, c.ntok*c.cols/32*k.bytes)
			require.NoError(t, quant.Quantize(k.t, x, want))
			const xoff, qoff = 5, 9
			nw := c.ntok * c.cols / 32 * k.words
			xb, qb := e.place(xoff, x), e.out(qoff+nw)
			e.run(k.name, [3]uint32{3, 1, 1}, pushWords(c.cols, c.ntok, xoff, qoff), xb, qb)
			raw := make([]byte, 4*nw)
			require.NoError(t, e.d.Download(raw, qb, 4*qoff))
			words := unsafe.Slice((*uint32)(unsafe.Pointer(&raw[0])), nw)
			require.Equal(t, want, k.decode(words), "%s %d×%d", k.name, c.ntok, c.cols)
		}
	}
}

// Q8_K activation quantization (K-quant matmuls) must give exactly the
// CPU's GGUF Q8_K blocks: the first value of largest magnitude sets the
// scale, ties round to even, and the 16-value sums are exact.
func TestQuantizeQ8K(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ ntok, cols int }{{1, 256}, {3, 768}, {7, 2048}} {
		x := e.random(c.ntok * c.cols)
		for i := range x {
			x[i] *= 7
			if i%97 == 5 {
				x[i] = 0
			}
		}
		// Equal magnitudes of opposite sign: the first one sets the scale.
		x[10], x[200] = -9, 9
		// Halves after scaling by -127/9 land on ties (x = k·9/127·0.5 is
		// not exact, but these come close).
		x[11], x[12] = 4.5*9/127, -0.5*9/127
		if len(x) > 512 {
			for i := 256; i < 512; i++ {
				x[i] = 0 // one all-zero block (d = 0)
			}
		}
		want := make([]byte, c.ntok*c.cols/256*292)
		require.NoError(t, quant.Quantize(gguf.TypeQ8_K, x, want))
		const xoff, qoff = 5, 9
		nw := c.ntok * c.cols / 256 * 73
		for _, name := range []string{"quantize_q8_k", "quantize_q8_k_lanes"} {
			xb, qb := e.place(xoff, x), e.out(qoff+nw)
			e.run(name, [3]uint32{2, 1, 1}, pushWords(c.cols, c.ntok, xoff, qoff), xb, qb)
			raw := make([]byte, 4*nw)
			require.NoError(t, e.d.Download(raw, qb, 4*qoff))
			require.Equal(t, want, raw, "%s %d×%d", name, c.ntok, c.cols)
		}
	}
}

// Matmuls: the float sums run in another order than the CPU's; each
// output must lie within 1e-7 + tol·Σ|w·x| of ref.MatMul (tol 2e-6 for
// float weights, about 34 float32 ulp of the sum of magnitudes; 4e-6 for
// Q8_0/Q4_0, whose per-block integer sums are exact and whose block terms
// are summed in another order), far below a wrong or missing term.
// Epilogues: plain, + residual (ADD), silu(gate)·up (GATEUP). Both
// kernels run: matmul (one invocation per row; not for K-quants) and
// matvec (a workgroup per row). K-quants take Q8_K activations and rows of
// 256·n; their integer sums per 32-value chunk are exact too.
// activations places x (ntok rows of cols) as the activations weights of
// type wt take: float32, binary16- or bfloat16-rounded, Q8_0, Q8_1 or Q8_K
// (by the quantize and round shaders), returning the buffer and offset.
func (e *env) activations(wt gguf.TensorType, x []float32, ntok, cols int) (*vulkan.Buffer, int) {
	const xoff, qoff = 5, 2
	xb := e.place(xoff, x)
	name, words := "", 0
	switch {
	case wt == gguf.TypeF16 || wt == gguf.TypeBF16:
		name, words = "round_"+typeName(wt), ntok*cols
	case q8_1(wt):
		name, words = "quantize_q8_1", ntok*cols/32*10
	case kQuant(wt):
		name, words = "quantize_q8_k", ntok*cols/256*73
	case wt.BlockSize() > 1:
		name, words = "quantize_q8_0", ntok*cols/32*9
	default:
		return xb, xoff
	}
	qb := e.out(qoff + words)
	e.run(name, [3]uint32{2, 1, 1}, pushWords(cols, ntok, xoff, qoff), xb, qb)
	return qb, qoff
}

// activationsFor is activations for kernel kern: the F16 tensor-core
// tiles (matmul_coop_*f16, matmul_cm2_*f16) take binary16 pairs (round_f16x2), from word 4
// (16-byte aligned, as the host places them).
func (e *env) activationsFor(kern string, wt gguf.TensorType, x []float32, ntok, cols int) (*vulkan.Buffer, int) {
	if !(strings.HasPrefix(kern, "matmul_coop") || strings.HasPrefix(kern, "matmul_cm2")) || wt != gguf.TypeF16 {
		return e.activations(wt, x, ntok, cols)
	}
	const xoff, qoff = 5, 4
	xb := e.place(xoff, x)
	qb := e.out(qoff + ntok*((cols+1)/2))
	e.run("round_f16x2", [3]uint32{2, 1, 1}, pushWords(cols, ntok, xoff, qoff), xb, qb)
	return qb, qoff
}

// The QKV variant (three weights packed in one buffer, rows of padding
// between them) writes each part exactly what the plain matvec writes for
// that weight alone, in its part's place, and nothing else.
func TestMatVecQKV(t *testing.T) {
	e := newEnv(t)
	for _, wt := range weightTypes {
		cols := 96
		if kQuant(wt) {
			cols = 512
		}
		rows := [3]int{67, 13, 9}
		start := [3]int{0, 67 + 2, 67 + 2 + 13 + 1}
		for _, ntok := range []int{1, 3} {
			rb, err := wt.RowBytes(uint64(cols))
			require.NoError(t, err)
			// rows of type wt without pad4's bytes, as a GGUF file holds them
			weights := func(n int) []byte { raw, _ := e.weights(wt, n, cols); return raw[:n*int(rb)] }
			raws := make([][]byte, 3)
			var packed []byte
			for i := range 3 {
				raws[i] = weights(rows[i])
				if i > 0 {
					packed = append(packed, weights(start[i]-start[i-1]-rows[i-1])...) // the padding rows
				}
				packed = append(packed, raws[i]...)
			}
			require.Equal(t, start[2]*int(rb), len(packed)-len(raws[2]), "%s: padding", typeName(wt))
			for i := range raws {
				raws[i] = pad4(raws[i])
			}
			packed = pad4(packed)
			xb, aoff := e.activations(wt, e.random(ntok*cols), ntok, cols)
			specs, nt := []string{""}, 8
			if ntok == 1 {
				specs, nt = []string{"#1"}, 1
				if e.twoRows() {
					specs = append(specs, "#1,2") // two rows a workgroup: padding beside live rows
				}
			}
			for _, spec := range specs {
				perGroup := 1
				if spec != "" {
					perGroup = matvecRows(spec[1:])
				}
				e.matVecQKV(wt, spec, nt, perGroup, ntok, cols, rows, start, raws, packed, xb, aoff)
			}
		}
	}
}

// matVecQKV runs TestMatVecQKV's one case: the parts alone, then packed.
func (e *env) matVecQKV(wt gguf.TensorType, spec string, nt, perGroup, ntok, cols int, rows, start [3]int, raws [][]byte, packed []byte, xb *vulkan.Buffer, aoff int) {
	const mtok, doff = 5, 3
	groups := func(n int) [3]uint32 {
		g := e.rows((n + perGroup - 1) / perGroup)
		g[2] = uint32((ntok + nt - 1) / nt)
		return g
	}
	total := mtok * (rows[0] + rows[1] + rows[2])
	want := make([]float32, total)
	for i := range want {
		want[i] = float32(math.NaN())
	}
	off := 0
	for i := range 3 {
		db := e.out(doff + rows[i]*ntok)
		e.run("matvec_"+typeName(wt)+spec, groups(rows[i]), pushWords(cols, rows[i], ntok, aoff, doff, 0, rows[i]), e.withGrid(wt, e.buf(len(raws[i]), raws[i]), xb, db)...)
		copy(want[off:], e.readAt(db, doff, rows[i]*ntok))
		off += mtok * rows[i]
	}
	db := e.out(doff + total + 4)
	n := start[2] + rows[2]
	e.run("matvec_qkv_"+typeName(wt)+spec, groups(n), pushWords(cols, n, ntok, aoff, doff, 0, 0, rows[0], start[1], rows[1], start[2], mtok),
		e.withGrid(wt, e.buf(len(packed), packed), xb, db)...)
	require.Equal(e.t, f32Bits(want), f32Bits(e.readAt(db, doff, total)), "matvec_qkv_%s%s ntok=%d", typeName(wt), spec, ntok)
}

// twoRows reports whether the device's subgroups fit matvec's 32-lane
// rows (two rows in a workgroup of 64).
func (e *env) twoRows() bool { return 32%e.d.Info().SubgroupSize == 0 }

// matvecRows is the rows per workgroup of a matvec specialization "1,R"
// (1 without R).
func matvecRows(spec string) int {
	_, r, ok := strings.Cut(spec, ",")
	if !ok {
		return 1
	}
	n, _ := strconv.Atoi(r)
	return n
}

func TestMatMul(t *testing.T) {
	e := newEnv(t)
	for _, wt := range weightTypes {
		cases := []struct{ rows, cols, ntok int }{{1, 32, 1}, {67, 96, 3}, {129, 288, 9}, {70, 2048, 17}, {130, 64, 70}}
		if kQuant(wt) {
			// The last: several tiles of the tiled kernel, both ways.
			// {9, 2816, 2}: 44 Q4_K chunk pairs, more than a two-row
			// matvec's 32 lanes (chunks an invocation), fewer than one
			// row's 64 (pairs).
			cases = []struct{ rows, cols, ntok int }{{1, 256, 1}, {67, 512, 3}, {33, 768, 17}, {5, 2048, 9}, {9, 2816, 2}, {130, 512, 70}}
		}
		if testing.Short() {
			cases = append(cases[:3], cases[len(cases)-1]) // several tiles of the tiled kernel
		}
		if wt.BlockSize() == 1 {
			cases = append(cases, struct{ rows, cols, ntok int }{7, 33, 2}) // odd rows of float weights
		}
		// matvec#1: the decode variant (one token per workgroup).
		// matmul_tiled: 64 rows × 64 tokens a workgroup. The types without
		// a matmul or matmul_tiled variant take matvec for every batch.
		var kernels []string
		for _, k := range []string{"matmul", "matmul_tiled"} {
			if hasKernel(k+"_", wt) {
				kernels = append(kernels, k)
			}
		}
		kernels = append(kernels, "matvec", "matvec#1")
		if e.twoRows() {
			kernels = append(kernels, "matvec#1,2") // two rows a workgroup
		}
		if e.coop(wt) {
			kernels = append(kernels, "matmul_coop") // matmul_tiled by tensor cores
		}
		kernels = append(kernels, e.cm2Kernels(wt)...)
		tol := 2e-6
		quantized := wt.BlockSize() > 1
		if quantized {
			tol = 4e-6
		}
		for _, c := range cases {
			for _, kern := range kernels {
				rawW, wf := e.weights(wt, c.rows, c.cols)
				rawU, uf := e.weights(wt, c.rows, c.cols)
				x := e.random(c.ntok * c.cols)
				res := e.random(c.ntok * c.rows)
				gate, up := mmAs(t, rawW, wt, c.rows, c.cols, x, c.ntok), mmAs(t, rawU, wt, c.rows, c.cols, x, c.ntok)
				mag := func(w []float32) []float64 {
					m := make([]float64, c.rows*c.ntok)
					for tk := 0; tk < c.ntok; tk++ {
						for r := 0; r < c.rows; r++ {
							s := 0.0
							for k := 0; k < c.cols; k++ {
								s += math.Abs(float64(w[r*c.cols+k]) * float64(x[tk*c.cols+k]))
							}
							m[tk*c.rows+r] = s
						}
					}
					return m
				}
				magW, magU := mag(wf), mag(uf)

				const doff, roff = 3, 7
				wb, ub, db := e.buf(len(rawW), rawW), e.buf(len(rawU), rawU), e.out(doff+c.rows*c.ntok+4)
				xb, aoff := e.activationsFor(kern, wt, x, c.ntok, c.cols)
				base, spec, _ := strings.Cut(kern, "#")
				nt, perGroup := 8, 1 // tokens and rows a workgroup
				suffix := ""         // the tile shape's (matmul_cm2)
				switch {
				case strings.HasPrefix(base, "matmul_cm2"):
					base, suffix = "matmul_cm2", strings.TrimPrefix(base, "matmul_cm2")
				case spec != "":
					nt, perGroup = 1, matvecRows(spec)
					spec = "#" + spec
				}
				name := func(epilogue string) string {
					return base + epilogue + "_" + typeName(wt) + suffix + spec
				}
				g := e.rows((c.rows + 63) / 64) // matmul: one invocation per weight row
				switch base {
				case "matvec":
					g = e.rows((c.rows + perGroup - 1) / perGroup) // perGroup weight rows a workgroup
				case "matmul_tiled", "matmul_coop":
					nt = 64 // and 64 rows
				case "matmul_cm2":
					var tr int
					tr, nt = cm2Tile(t, name(""))
					g = e.rows((c.rows + tr - 1) / tr)
				}
				g[2] = uint32((c.ntok + nt - 1) / nt)
				push := pushWords(c.cols, c.rows, c.ntok, aoff, doff, roff, c.rows)
				label := fmt.Sprintf("%s %s %dx%d ntok=%d", kern, typeName(wt), c.rows, c.cols, c.ntok)

				check := func(what string, want []float32, bound func(i int) float64) {
					got := e.readAt(db, doff, len(want))
					worst := 0.0
					for i := range want {
						b := bound(i)
						if !close(float64(got[i]), float64(want[i]), b, 0) {
							require.Failf(t, what, "%s: output %d: got %g, want %g (tolerance %g)", label, i, got[i], want[i], b)
						}
						worst = max(worst, math.Abs(float64(got[i]-want[i]))/b)
					}
					t.Logf("%s %s: max |error|/tolerance = %.2g", what, label, worst)
				}
				// A kernel that decodes its weights to binary16 (KQ_F16)
				// is held to F16's products and bound over those
				// weights, with binary16 pairs of activations.
				type inputs struct {
					gate, up, magW, magU []float32
					xb                   *vulkan.Buffer
					push                 []byte
					tol                  float64
				}
				quantizedIn := inputs{gate, up, nil, nil, xb, push, tol}
				inputsFor := func(epilogue string) inputs {
					if base != "matmul_coop" || !decodesToBinary16(t, name(epilogue)) {
						return quantizedIn
					}
					f16W, f16U := binary16Weights(t, wt, rawW, c.rows, c.cols), binary16Weights(t, wt, rawU, c.rows, c.cols)
					in := inputs{mmAs(t, f16W, gguf.TypeF16, c.rows, c.cols, x, c.ntok), mmAs(t, f16U, gguf.TypeF16, c.rows, c.cols, x, c.ntok), f16Values(f16W), f16Values(f16U), nil, nil, 2e-6}
					var off int
					in.xb, off = e.activationsFor(kern, gguf.TypeF16, x, c.ntok, c.cols)
					in.push = pushWords(c.cols, c.rows, c.ntok, off, doff, roff, c.rows)
					return in
				}
				magOf := func(in inputs) ([]float64, []float64) {
					if in.magW == nil {
						return magW, magU
					}
					return mag(in.magW), mag(in.magU)
				}

				in := inputsFor("")
				mw, _ := magOf(in)
				e.run(name(""), g, in.push, e.withGrid(wt, wb, in.xb, db)...)
				check("matmul", in.gate, func(i int) float64 { return 1e-7 + in.tol*mw[i] })

				in = inputsFor("_add")
				mw, _ = magOf(in)
				rb := e.place(roff, res)
				want := make([]float32, len(gate))
				ref.Add(want, in.gate, res)
				e.run(name("_add"), g, in.push, e.withGrid(wt, wb, in.xb, db, rb)...)
				check("matmul+add", want, func(i int) float64 { return 1e-7 + in.tol*mw[i] })

				in = inputsFor("_gateup")
				gate, up, gxb, gpush, gtol := in.gate, in.up, in.xb, in.push, in.tol
				magW, magU = magOf(in)
				ref.SwiGLU(want, gate, up)
				e.run(name("_gateup"), g, gpush, e.withGrid(wt, wb, gxb, db, ub)...)
				check("matmul gate·up", want, func(i int) float64 {
					// silu'(x) ≤ 1.1: the gate's error passes through scaled by |up|,
					// the up's by |silu(gate)| ≤ |gate|+0.3; exp adds a few ulp.
					return 1e-6 + 1e-5*math.Abs(float64(want[i])) +
						1.1*(1e-7+gtol*magW[i])*math.Abs(float64(up[i])) + (math.Abs(float64(gate[i]))+0.3)*(1e-7+gtol*magU[i])
				})
			}
		}
	}
}

// decodesToBinary16 says whether kernel name decodes its quantized
// weights to binary16 for the tensor cores (KQ_F16).
func decodesToBinary16(t testing.TB, name string) bool {
	return slices.Contains(mustLookup(t, name).Defines, "KQ_F16")
}

// mustLookup is shaders.Lookup that fails the test or benchmark.
func mustLookup(t testing.TB, name string) shaders.Kernel {
	k, err := shaders.Lookup(name)
	require.NoError(t, err)
	return k
}

// binary16Weights is what a kernel that decodes its weights to binary16
// (KQ_F16) stages for rows raw of type wt: quant's float32 values
// (llama.cpp's dequantization: d·q, d·q + m, d·scale·q − dmin·min, each
// product exact), rounded to nearest even binary16, as F16 rows.
func binary16Weights(t *testing.T, wt gguf.TensorType, raw []byte, rows, cols int) []byte {
	rb, err := wt.RowBytes(uint64(cols))
	require.NoError(t, err)
	f := make([]float32, rows*cols)
	require.NoError(t, quant.Dequantize(wt, raw[:rows*int(rb)], f))
	out := make([]byte, 0, 2*len(f))
	for _, v := range f {
		out = binary.LittleEndian.AppendUint16(out, quant.FP32ToFP16(v))
	}
	return out
}

// f16Values is F16 rows' values as float32.
func f16Values(raw []byte) []float32 {
	f := make([]float32, len(raw)/2)
	for i := range f {
		f[i] = quant.FP16ToFP32(binary.LittleEndian.Uint16(raw[2*i:]))
	}
	return f
}

// mmAs is ref.MatMul of rows × cols weights raw of type wt by ntok
// tokens x.
func mmAs(t *testing.T, raw []byte, wt gguf.TensorType, rows, cols int, x []float32, ntok int) []float32 {
	out := make([]float32, rows*ntok)
	scratch := make([]float32, (ref.ActScratchBytes(wt, cols, ntok)+3)/4)
	require.NoError(t, ref.MatMul(out, raw, wt, rows, cols, x, ntok, unsafeBytes(scratch)))
	return out
}

// RoPE: the table holds the CPU's cos and sin, and the products are not
// contracted, so the rotation is bit-identical to ref.RoPE, for both pair
// layouts, with pass-through dimensions and scattered positions.
func TestRoPE(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		heads, hd, dims int
		neox, ext       bool // ext: frequency factors and YaRN
	}{{8, 8, 8, false, false}, {6, 48, 48, false, false}, {3, 64, 32, true, false}, {5, 80, 64, false, false},
		{3, 64, 64, true, true}, {2, 40, 24, false, true}} {
		const ntok, ctx, xoff, doff, posoff = 5, 300, 3, 5, 2
		pos := []int32{0, 1, 77, 299, 150}
		rp := ref.RoPE{Dims: c.dims, Base: 10000, FreqScale: 1, NeoX: c.neox, Unfused: true}
		if c.ext {
			rp.FreqScale, rp.ExtFactor, rp.AttnFactor = 0.25, 1, 1
			rp.CorrDims = ref.YaRNCorrDims(c.dims, 64, rp.Base, 32, 1)
			rp.Factors = make([]float32, c.dims/2)
			for i := range rp.Factors {
				rp.Factors[i] = 1 + float32(i%5)
			}
		}
		width := c.heads * c.hd
		x := e.random(ntok * width)
		want := append([]float32(nil), x...)
		for i := range ntok {
			rp.Apply(want[i*width:(i+1)*width], c.heads, c.hd, pos[i])
		}
		posw := make([]uint32, ntok)
		for i, p := range pos {
			posw[i] = uint32(p)
		}
		table := vulkan.RoPETable(rp, ctx)
		const toff = 6
		xb, tb, sb, db := e.place(xoff, x), e.place(toff, table), e.words(posw, posoff), e.out(doff+len(x)+3)
		e.run("rope_f32", [3]uint32{7, 1, 1}, pushWords(c.heads, c.hd, c.dims/2, map[bool]int{false: 0, true: 1}[c.neox], ntok, xoff, doff, posoff, toff), xb, tb, sb, db)
		require.Equal(t, want, e.readAt(db, doff, len(x)), "%+v", c)
	}
}

// RoPE·KV store (rope_kv): the rotated queries and the cache rows must be
// exactly ref.RoPE's and ref.KV.Store's (what rope_f32 then kv_store
// writes): both pair layouts, pass-through dimensions, frequency factors,
// grouped-query heads, scattered positions in two sequences' cells, and
// no queries (qheads 0: the queries are rotated apart).
func TestRoPEKV(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		heads, kvHeads, hd, dims, ntok int
		neox, ext                      bool
	}{{8, 8, 8, 8, 5, false, false}, {6, 2, 48, 48, 3, false, false}, {4, 1, 64, 32, 1, true, false},
		{5, 5, 80, 64, 2, false, false}, {3, 3, 64, 64, 4, true, true}, {2, 1, 40, 24, 3, false, true},
		{4, 2, 6, 2, 3, true, false}, {0, 3, 64, 64, 2, false, false}} {
		for _, f16 := range []bool{true, false} {
			const ctx, qoff, doff, koff, voff, posoff, toff = 40, 3, 5, 7, 2, 1, 6
			pos := []int32{0, 17, 39, 5, 11}[:c.ntok]
			cells := []uint32{0, ctx, 0, ctx, ctx}[:c.ntok] // tokens of two sequences
			rp := ref.RoPE{Dims: c.dims, Base: 10000, FreqScale: 1, NeoX: c.neox, Unfused: true}
			if c.ext {
				rp.FreqScale, rp.ExtFactor, rp.AttnFactor = 0.25, 1, 1
				rp.CorrDims = ref.YaRNCorrDims(c.dims, 64, rp.Base, 32, 1)
				rp.Factors = make([]float32, c.dims/2)
				for i := range rp.Factors {
					rp.Factors[i] = 1 + float32(i%5)
				}
			}
			qw, w := c.heads*c.hd, c.kvHeads*c.hd
			q, k, v := e.random(c.ntok*qw), e.random(c.ntok*w), e.random(c.ntok*w)
			wantQ, wantK := append([]float32(nil), q...), append([]float32(nil), k...)
			kr, vr := ref.KV{RowLen: w}, ref.KV{RowLen: w}
			if f16 {
				kr.F16, vr.F16 = make([]uint16, 2*ctx*w), make([]uint16, 2*ctx*w)
			} else {
				kr.F32, vr.F32 = make([]float32, 2*ctx*w), make([]float32, 2*ctx*w)
			}
			for i := range c.ntok {
				rp.Apply(wantQ[i*qw:(i+1)*qw], c.heads, c.hd, pos[i])
				rp.Apply(wantK[i*w:(i+1)*w], c.kvHeads, c.hd, pos[i])
				kr.Store(int(cells[i])+int(pos[i]), wantK[i*w:])
				vr.Store(int(cells[i])+int(pos[i]), v[i*w:])
			}
			// q, k and v lie in one arena buffer, as in the executor.
			arena := make([]float32, 64+c.ntok*(qw+2*w))
			for i := range arena {
				arena[i] = float32(math.NaN())
			}
			ko, vo := qoff+len(q)+koff, qoff+len(q)+koff+len(k)+voff
			copy(arena[qoff:], q)
			copy(arena[ko:], k)
			copy(arena[vo:], v)
			xb := e.place(0, arena)
			words := make([]uint32, 2*c.ntok)
			for i := range c.ntok {
				words[i], words[c.ntok+i] = uint32(pos[i]), cells[i]
			}
			sb := e.words(words, posoff)
			tb := e.place(toff, vulkan.RoPETable(rp, ctx))
			db := e.out(doff + len(q) + 3)
			elem := map[bool]int{true: 2, false: 4}[f16]
			kc, vc := e.buf(2*ctx*w*elem, make([]byte, 2*ctx*w*elem)), e.buf(2*ctx*w*elem, make([]byte, 2*ctx*w*elem))
			kind := map[bool]string{true: "f16", false: "f32"}[f16]
			e.run("rope_kv_"+kind, [3]uint32{3, 1, 1}, pushWords(c.heads, c.kvHeads, c.hd, c.dims/2, map[bool]int{false: 0, true: 1}[c.neox], c.ntok,
				qoff, doff, ko, vo, posoff, posoff+c.ntok, toff), xb, tb, sb, db, kc, vc)
			what := fmt.Sprintf("rope_kv_%s %+v", kind, c)
			if c.heads > 0 {
				require.Equal(t, f32Bits(wantQ), f32Bits(e.readAt(db, doff, len(q))), "%s: q", what)
			}
			for name, pair := range map[string]struct {
				kv  ref.KV
				buf *vulkan.Buffer
			}{"K": {kr, kc}, "V": {vr, vc}} {
				var want []byte
				if f16 {
					for _, h := range pair.kv.F16 {
						want = binary.LittleEndian.AppendUint16(want, h)
					}
				} else {
					want = f32Bytes(pair.kv.F32)
				}
				got := make([]byte, len(want))
				require.NoError(t, e.d.Download(got, pair.buf, 0))
				require.Equal(t, want, got, "%s: %s cache", what, name)
			}
		}
	}
}

// KV store and attention against ref.Attention, prefill (several tokens
// after earlier positions) and decode, grouped-query heads, head sizes
// not a power of two, visible lengths across the 64-position chunks.
// The KV store must be bit-exact (binary16 rounding to nearest even).
// Attention sums in another order and takes the device's exp: tolerance
// 2e-6 + 2e-5·|want| for an f32 cache; for an f16 cache a probability
// may round to the neighbouring binary16 value, 1e-4 + 1e-3·|want|.
func TestAttention(t *testing.T) {
	e := newEnv(t)
	for _, f16 := range []bool{true, false} {
		for _, c := range []struct {
			heads, kvHeads, hd, pos0, ntok, window int
			softCap                                float32
		}{
			{8, 8, 8, 0, 5, 0, 0}, {6, 2, 48, 37, 30, 0, 0}, {4, 1, 64, 130, 1, 0, 0}, {2, 2, 256, 3, 2, 0, 0}, {9, 3, 80, 64, 7, 0, 0},
			{3, 1, 6, 11, 2, 0, 0},    // K pairs left over after the 8-pair loads
			{4, 2, 64, 2100, 3, 0, 0}, // more positions than the shader keeps scores of
			{4, 2, 64, 100, 9, 37, 0}, // a sliding window (tokens see 37 positions)
			{3, 1, 48, 2100, 2, 1000, 0},
			{6, 2, 48, 37, 30, 0, 1.5}, // soft-capped scores (Gemma 2)
			{4, 1, 64, 2100, 1, 0, 2},
			{4, 2, 64, 40, 70, 0, 0},  // attention_tiled: several tiles of tokens and of rows
			{2, 2, 128, 5, 33, 0, 0},  // its largest head
			{4, 2, 80, 90, 50, 37, 0}, // a window over tiles, a head of 80
			{2, 1, 12, 0, 17, 0, 0},
		} {
			n := c.pos0 + c.ntok
			w := c.kvHeads * c.hd
			k, v := e.random(n*w), e.random(n*w)
			q := e.random(c.ntok * c.heads * c.hd)
			for i := range q {
				q[i] *= 3
			}
			scale := float32(1 / math.Sqrt(float64(c.hd)))
			kr, vr := ref.KV{RowLen: w}, ref.KV{RowLen: w}
			if f16 {
				kr.F16, vr.F16 = make([]uint16, n*w), make([]uint16, n*w)
			} else {
				kr.F32, vr.F32 = make([]float32, n*w), make([]float32, n*w)
			}
			for p := 0; p < n; p++ {
				kr.Store(p, k[p*w:])
				vr.Store(p, v[p*w:])
			}
			want := make([]float32, len(q))
			ref.AttentionWith(want, q, kr, vr, c.ntok, c.pos0, c.heads, c.kvHeads, c.hd, scale, ref.AttnOptions{Window: c.window, SoftCap: c.softCap}, make([]float32, ref.AttentionScratch(c.ntok, c.pos0)))

			// The cache holds the earlier positions; the batch is stored by kv_store.
			cacheBytes := func(kv ref.KV) []byte {
				var b []byte
				if f16 {
					for _, h := range kv.F16 {
						b = binary.LittleEndian.AppendUint16(b, h)
					}
				} else {
					b = f32Bytes(kv.F32)
				}
				return pad4(b)
			}
			kWant, vWant := cacheBytes(kr), cacheBytes(vr)
			elem := 4
			if f16 {
				elem = 2
			}
			kc, vc := e.out(len(kWant)/4+8), e.out(len(vWant)/4+8)
			require.NoError(t, e.d.Upload(kc, 0, kWant[:c.pos0*w*elem]))
			require.NoError(t, e.d.Upload(vc, 0, vWant[:c.pos0*w*elem]))
			pos := make([]uint32, c.ntok)
			for i := range pos {
				pos[i] = uint32(c.pos0 + i)
			}
			const koff, voff, qoff, ooff, posoff = 3, 4, 5, 6, 1
			kb, vb := e.place(koff, k[c.pos0*w:]), e.place(voff, v[c.pos0*w:])
			// The batch's tokens are of one sequence, whose cells start at
			// the cache's first (the step buffer's cells after the positions).
			celloff := posoff + c.ntok
			sb := e.words(append(pos, make([]uint32, c.ntok)...), posoff)
			kind := map[bool]string{true: "f16", false: "f32"}[f16]
			e.run("kv_store_"+kind, [3]uint32{5, 1, 1}, pushWords(w, c.ntok, koff, voff, posoff, celloff), kb, vb, sb, kc, vc)
			for name, pair := range map[string][2][]byte{"K": {kWant, nil}, "V": {vWant, nil}} {
				buf := map[string]*vulkan.Buffer{"K": kc, "V": vc}[name]
				got := make([]byte, n*w*elem)
				require.NoError(t, e.d.Download(got, buf, 0))
				require.Equal(t, pair[0][:n*w*elem], got, "kv_store_%s %s %+v", kind, name, c)
			}

			qb := e.place(qoff, q)
			// attention.comp takes a workgroup per (head, token);
			// attention_tiled.comp one per (head, tile of 16 tokens), for
			// heads of up to 128, multiples of 4.
			kernels := map[string][3]uint32{"attention_" + kind: {uint32(c.heads), uint32(c.ntok), 1}}
			if c.hd <= 128 && c.hd%4 == 0 {
				kernels["attention_tiled_"+kind] = [3]uint32{uint32(c.heads), uint32((c.ntok + 15) / 16), 1}
			}
			// attention_coop.comp and attention_cm2.comp (tensor cores,
			// where the device has them) one per (head, tile of tokens),
			// for an F16 cache and heads of up to 128, multiples of 16.
			if f16 {
				for name, tq := range e.tensorCoreAttention(c.hd) {
					kernels[name] = [3]uint32{uint32(c.heads), uint32((c.ntok + tq - 1) / tq), 1}
				}
			}
			for name, grid := range kernels {
				ob := e.out(ooff + len(q) + 2)
				push := []any{c.heads, c.kvHeads, c.hd, c.ntok, qoff, ooff, posoff, scale, 0, celloff, c.window, c.softCap, capInv(c.softCap)}
				e.run(name, grid, pushWords(push...), qb, sb, kc, vc, ob)
				got := e.readAt(ob, ooff, len(q))
				requireClose(t, fmt.Sprintf("%s %+v", name, c), got, want, attentionAbs(f16), attentionRel(f16))
				if c.hd%32 == 0 {
					push[8] = 2 // aoff
					requireFusedActivations(t, e, name, grid, push, c.heads*c.hd, got, ob, qb, sb, kc, vc)
				}
			}
		}
	}
}

// attentionAbs and attentionRel are the attention kernels' tolerances
// against ops/ref. With an F16 cache the probabilities are rounded to
// binary16 before P·V; exp differing in the last float ulp flips a
// rounding now and then, each worth up to half a binary16 ulp of p times
// |v|: at 67 positions of p ≈ 0.015 a few dozen flips reach 1.5e-4.
func attentionAbs(f16 bool) float64 {
	if f16 {
		return 3e-4
	}
	return 2e-6
}

func attentionRel(f16 bool) float64 {
	if f16 {
		return 1e-3
	}
	return 2e-5
}

// requireFusedActivations runs attention kernel name's variants fused
// with the output projection's activations (push's aoff, word 8, set) on
// buffers in, and requires the values it gave unfused (got, also in ob)
// and the bits quantize_q8_0/q8_1 give them; rows of cols values.
func requireFusedActivations(t *testing.T, e *env, name string, grid [3]uint32, push []any, cols int, got []float32, ob *vulkan.Buffer, in ...*vulkan.Buffer) {
	t.Helper()
	n, ooff, aoff := len(got), push[5].(int), push[8].(int)
	for _, act := range []struct {
		name string
		bw   int
	}{{"q8_0", 9}, {"q8_1", 10}} {
		words := n / 32 * act.bw
		qa, qf, of := e.out(aoff+words), e.out(aoff+words), e.out(ooff+n+2)
		e.run("quantize_"+act.name, [3]uint32{3, 1, 1}, pushWords(cols, n/cols, ooff, aoff), ob, qa)
		e.run(name+"_"+act.name, grid, pushWords(push...), append(append([]*vulkan.Buffer{}, in...), of, qf)...)
		require.Equal(t, f32Bits(got), f32Bits(e.readAt(of, ooff, n)), "%s_%s: values", name, act.name)
		require.Equal(t, f32Bits(e.readAt(qa, aoff, words)), f32Bits(e.readAt(qf, aoff, words)), "%s_%s: activations", name, act.name)
	}
}

// SwiGLU as SiLU (same tolerance) times up.
func TestSwiGLU(t *testing.T) {
	e := newEnv(t)
	for _, n := range []int{1, 17, 4099} {
		x, u := e.random(n), e.random(n)
		for i := range x {
			x[i] *= 12
		}
		want := make([]float32, n)
		ref.SwiGLU(want, x, u)
		const xoff, uoff, doff = 1, 2, 3
		xb, ub, db := e.place(xoff, x), e.place(uoff, u), e.out(doff+n)
		e.run("swiglu_f32", [3]uint32{3, 1, 1}, pushWords(n, xoff, doff, uoff), xb, ub, db)
		requireClose(t, fmt.Sprintf("swiglu n=%d", n), e.readAt(db, doff, n), want, 1e-6, 4e-6)
	}
}

// capInv is 1/cap in float32 (0 for no cap), as the host passes it.
func capInv(cap float32) float32 {
	if cap == 0 {
		return 0
	}
	return 1 / cap
}

// runs says whether this device can create kernel name (the tensor-core
// variants need cooperative matrices).
func (e *env) runs(name string) bool {
	k, err := shaders.Lookup(name)
	return err == nil && e.d.Info().RunsKernel(k)
}

// tensorCoreAttention is the prefill attention kernels on tensor cores
// (attention_coop.comp's, attention_cm2.comp's in every shape) that this
// device runs for an F16 cache and heads of hd values, each with the
// tokens a workgroup takes; not the variants fused with the activations
// (requireFusedActivations runs those).
func (e *env) tensorCoreAttention(hd int) map[string]int {
	out := map[string]int{}
	if hd%16 != 0 {
		return out
	}
	for _, k := range shaders.All() {
		fused := strings.HasSuffix(k.Name, "_q8_0") || strings.HasSuffix(k.Name, "_q8_1")
		switch {
		case fused || !e.runs(k.Name):
		case k.Name == "attention_coop_f16" && hd <= 128, k.Name == "attention_coop_hd64_f16" && hd <= 64:
			out[k.Name] = 64
		case strings.HasPrefix(k.Name, "attention_cm2_"):
			if d, _ := k.DefineInt("AT_D"); hd <= d {
				out[k.Name], _ = k.DefineInt("AT_TQ")
			}
		}
	}
	return out
}

// cm2Kernels are TestMatMul's names of the matmul_cm2 variants (one a
// tile shape: "matmul_cm2" and its suffix) for weights of type wt that
// this device runs (cooperative matrix 2).
func (e *env) cm2Kernels(wt gguf.TensorType) []string {
	var out []string
	prefix := "matmul_cm2_" + typeName(wt)
	for _, k := range shaders.All() {
		if suffix, ok := strings.CutPrefix(k.Name, prefix); ok && e.runs(k.Name) {
			out = append(out, "matmul_cm2"+suffix)
		}
	}
	return out
}

// cm2Tile is the tile of matmul_cm2 variant name: rows and tokens a
// workgroup.
func cm2Tile(t testing.TB, name string) (rows, toks int) {
	k := mustLookup(t, name)
	rows, ok := k.DefineInt("CM_TR")
	require.True(t, ok, name)
	toks, ok = k.DefineInt("CM_TT")
	require.True(t, ok, name)
	return rows, toks
}

// coop says whether weights of type wt have matmul_coop variants that this
// device can run (NVIDIA's int8 cooperative matrices).
func (e *env) coop(wt gguf.TensorType) bool { return e.runs("matmul_coop_" + typeName(wt)) }

package simd

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// TestPackedGemm multiplies fresh random weights, repacked, by packed
// activations with every variant and compares each product with
// quant.VecDot on the original rows; row counts leave partial groups,
// token counts partial token groups, and the gaps of dst stay poisoned.
func TestPackedGemm(t *testing.T) {
	r := newRand(t)
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeIQ4_XS} {
		at := quant.VecDotType(typ)
		for _, sh := range packedShapes(typ) {
			n, nRows, nTok := sh[0], sh[1], sh[2]
			rows := make([][]byte, nRows)
			var w []byte
			for i := range rows {
				rows[i] = quantized(t, r, typ, n)
				w = append(w, rows[i]...)
			}
			packed, err := Repack(typ, nRows, n, w)
			if err != nil {
				t.Fatal(err)
			}
			acts := make([][]byte, nTok)
			for i := range acts {
				acts[i] = quantized(t, r, at, n)
			}
			forEachVariant(t, func(t *testing.T) {
				dst, stride := runPackedGemm(t, typ, n, packed, nRows, acts)
				for tok := range nTok {
					for row := range nRows {
						got := dst[tok*stride+row]
						want := quant.VecDot(typ, n, rows[row], acts[tok])
						bound := dotBound(magnitude(t, typ, rows[row], n), dequant(t, at, acts[tok], n), n/32+n/256)
						if d := math.Abs(float64(got - want)); !(d <= bound) {
							t.Fatalf("%s %v: [tok %d, row %d] = %g, want %g (bound %g)", typ, sh, tok, row, got, want, bound)
						}
					}
				}
			})
		}
	}
}

// runPackedGemm packs acts (one row of n columns a token), multiplies the
// packed weights of nRows rows by them into a NaN-poisoned dst with a
// stride of nRows + 3, checks that the gaps stay NaN, and returns dst and
// its stride.
func runPackedGemm(t *testing.T, typ gguf.TensorType, n int, packed []byte, nRows int, acts [][]byte) ([]float32, int) {
	t.Helper()
	nTok := len(acts)
	act := nanBytes(PackActBytes(n, nTok))
	for i, a := range acts {
		PackActRow(typ, a, n, i, nTok, act)
	}
	stride := nRows + 3
	dst := nanRow(nTok * stride)
	PackedGemm(typ)(n, packed, nRows, act, nTok, dst, stride)
	for tok := range nTok {
		for row := nRows; row < stride; row++ {
			if !math.IsNaN(float64(dst[tok*stride+row])) {
				t.Fatalf("%s: gap [%d,%d] overwritten", typ, tok, row)
			}
		}
	}
	return dst, stride
}

// packedShapes are {columns, rows, tokens} with partial groups of rows
// and of tokens, for blocks of typ's width.
func packedShapes(typ gguf.TensorType) [][3]int {
	if typ.BlockSize() == 256 {
		return [][3]int{{256, 1, 1}, {512, 15, 2}, {256, 16, 8}, {768, 17, 9}, {256, 33, 17}, {2048, 50, 3}}
	}
	return [][3]int{{32, 1, 1}, {64, 15, 2}, {96, 16, 8}, {256, 17, 9}, {160, 33, 17}, {2048, 50, 3}}
}

// nanBytes is a buffer of 0xff bytes: NaN scales wherever it is not written.
func nanBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xff
	}
	return b
}

// TestRepackRoundTrip reads every quant and scale back out of the packed
// layout and checks that the padding rows are zero.
func TestRepackRoundTrip(t *testing.T) {
	r := newRand(t)
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ8_0} {
		const n, nRows = 96, 21
		src := quantized(t, r, typ, n*nRows)
		p, err := Repack(typ, nRows, n, src)
		if err != nil {
			t.Fatal(err)
		}
		bb, nb, gb := int(typ.BlockBytes()), n/32, groupBytes(typ)
		for row := range 32 {
			for b := range nb {
				blk := p[((row/PackRows)*nb+b)*gb:]
				lane := row % PackRows
				if blk[2*lane] != byteAt(src, row, nRows, (row*nb+b)*bb) || blk[2*lane+1] != byteAt(src, row, nRows, (row*nb+b)*bb+1) {
					t.Fatalf("%s row %d block %d: scale moved", typ, row, b)
				}
				for i := range 32 {
					if got, want := packedQuant(typ, blk, lane, i), unsignedQuant(typ, src, row, nRows, (row*nb+b)*bb, i); got != want && row < nRows {
						t.Fatalf("%s row %d block %d elem %d: %d, want %d", typ, row, b, i, got, want)
					}
				}
			}
		}
	}
	if _, err := Repack(gguf.TypeQ4_0, 2, 48, make([]byte, 2*18*2)); err == nil {
		t.Fatal("48 columns accepted")
	}
	if _, err := Repack(gguf.TypeQ4_0, 2, 64, make([]byte, 10)); err == nil {
		t.Fatal("a short source accepted")
	}
}

func byteAt(src []byte, row, nRows, off int) byte {
	if row >= nRows {
		return 0
	}
	return src[off]
}

// unsignedQuant is element i of a GGUF block as the kernels see it.
func unsignedQuant(typ gguf.TensorType, src []byte, row, nRows, off, i int) uint8 {
	if row >= nRows {
		return 0
	}
	qs := src[off+2:]
	if typ == gguf.TypeQ8_0 {
		return qs[i] ^ 0x80
	}
	if i >= 16 {
		return qs[i-16] >> 4
	}
	return qs[i] & 0x0f
}

func TestBlockSum(t *testing.T) {
	r := newRand(t)
	q := make([]byte, 32)
	for range 1000 {
		var want int32
		for i := range q {
			q[i] = byte(r.IntN(256))
			want += int32(int8(q[i]))
		}
		if got := blockSum(q); got != want {
			t.Fatalf("blockSum = %d, want %d", got, want)
		}
	}
}

// TestRepackQ4KRoundTrip reads every quant, scale and min back out of the
// packed Q4_K layout and checks that the padding rows are zero.
func TestRepackQ4KRoundTrip(t *testing.T) {
	r := newRand(t)
	const n, nRows, nb = 512, 21, 2
	src := quantized(t, r, gguf.TypeQ4_K, n*nRows)
	p, err := Repack(gguf.TypeQ4_K, nRows, n, src)
	if err != nil {
		t.Fatal(err)
	}
	for row := range 32 {
		for b := range nb {
			blk := p[((row/PackRows)*nb+b)*kGroupBytes:]
			lane, off := row%PackRows, (row*nb+b)*q4kBlockBytes
			var orig []byte
			if row < nRows {
				orig = src[off : off+q4kBlockBytes]
			} else {
				orig = make([]byte, q4kBlockBytes)
			}
			if blk[2*lane] != orig[0] || blk[2*lane+1] != orig[1] || blk[32+2*lane] != orig[2] || blk[33+2*lane] != orig[3] {
				t.Fatalf("row %d block %d: d or dmin moved", row, b)
			}
			for s := range kSubBlocks {
				sc, m := scaleMinQ4K(orig[4:16], s)
				if blk[64+16*s+lane] != sc || blk[192+32*(s/2)+2*lane+s%2] != m {
					t.Fatalf("row %d block %d sub-block %d: scale or min moved", row, b, s)
				}
				for e := range kSubBlockElems {
					if got, want := packedQ4KQuant(blk, lane, s, e), q4kElem(orig[16:], 32*s+e); got != want {
						t.Fatalf("row %d block %d elem %d: %d, want %d", row, b, 32*s+e, got, want)
					}
				}
			}
		}
	}
	if _, err := Repack(gguf.TypeQ4_K, 2, 128, make([]byte, 2*72)); err == nil {
		t.Fatal("128 columns accepted")
	}
}

// TestPackedKIntegerExact sets the K-quants' d (and dmin) and the
// activation scales to 1: every output is then an integer sum that any
// order gives exactly.
func TestPackedKIntegerExact(t *testing.T) {
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		t.Run(typ.String(), func(t *testing.T) { packedIntegerExact(t, typ) })
	}
}

func packedIntegerExact(t *testing.T, typ gguf.TensorType) {
	r := newRand(t)
	const n, nRows, nTok = 768, 19, 10
	rows := make([][]byte, nRows)
	var w []byte
	for i := range rows {
		rows[i] = quantized(t, r, typ, n)
		setScalesOne(typ, rows[i])
		w = append(w, rows[i]...)
	}
	packed, err := Repack(typ, nRows, n, w)
	if err != nil {
		t.Fatal(err)
	}
	acts := make([][]byte, nTok)
	for i := range acts {
		acts[i] = quantized(t, r, gguf.TypeQ8_K, n)
		setScalesOne(gguf.TypeQ8_K, acts[i])
	}
	forEachVariant(t, func(t *testing.T) {
		act := nanBytes(PackActBytes(n, nTok))
		for i, a := range acts {
			PackActRow(typ, a, n, i, nTok, act)
		}
		dst := nanRow(nTok * nRows)
		PackedGemm(typ)(n, packed, nRows, act, nTok, dst, nRows)
		for tok := range nTok {
			for row := range nRows {
				if got, want := dst[tok*nRows+row], quant.VecDot(typ, n, rows[row], acts[tok]); got != want {
					t.Fatalf("[tok %d, row %d] = %g, want %g", tok, row, got, want)
				}
			}
		}
	})
}

// TestRepackQ6KRoundTrip reads every quant and scale back out of the
// packed Q6_K layout and checks them against the GGUF block's dequantized
// values, and that the padding rows are zero.
func TestRepackQ6KRoundTrip(t *testing.T) {
	r := newRand(t)
	const n, nRows, nb = 512, 21, 2
	typ := gguf.TypeQ6_K
	src := quantized(t, r, typ, n*nRows)
	p, err := Repack(typ, nRows, n, src)
	if err != nil {
		t.Fatal(err)
	}
	gb := groupBytes(typ)
	for row := range 32 {
		for b := range nb {
			blk := p[((row/PackRows)*nb+b)*gb:]
			lane := row % PackRows
			var vals []float64
			if row < nRows {
				vals = dequant(t, typ, src[(row*nb+b)*q6kBlockBytes:(row*nb+b+1)*q6kBlockBytes], 256)
			} else {
				vals = make([]float64, 256)
			}
			d := float64(quant.FP16ToFP32(binary.LittleEndian.Uint16(blk[2*lane:])))
			for e := range 256 {
				q := packedQ6KQuant(blk, lane, e/32, e%32)
				got := d * float64(q6kScale(blk, lane, e/16)) * (float64(q) - 32)
				if row >= nRows && (q != 0 || got != 0) {
					t.Fatalf("padding row %d block %d elem %d: q %d", row, b, e, q)
				}
				if row < nRows && float32(got) != float32(vals[e]) {
					t.Fatalf("row %d block %d elem %d: %g, want %g", row, b, e, got, vals[e])
				}
			}
		}
	}
}

// TestPackedKernelsPresent guards against a table that silently loses its
// packed tiles, which TestPackedGemm would pass through the Go fallback.
func TestPackedKernelsPresent(t *testing.T) {
	for _, v := range available {
		if v.name != "avx512vnni" {
			continue
		}
		for name, typ := range packedNames {
			if _, ok := v.packed[typ]; !ok {
				t.Errorf("variant %s has no packed tiles for %s", v.name, name)
			}
		}
	}
}

// TestRepackSplitsLikeOneWorker repacks matrices large enough to be shared
// among workers (rows not a multiple of the group) and compares with one
// worker doing every group.
func TestRepackSplitsLikeOneWorker(t *testing.T) {
	r := newRand(t)
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeIQ4_XS} {
		const cols = 8192
		rows := 16*200 + 5
		rb, _ := typ.RowBytes(cols)
		src := make([]byte, rows*int(rb)) // repacking only moves bytes: any will do
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		got, err := Repack(typ, rows, cols, src)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) < 8<<20 {
			t.Fatalf("%s: %d bytes is too small to be split", typ, len(got))
		}
		want := make([]byte, len(got))
		for i := range want {
			want[i] = 0xa5 // one worker must clear what it does not write
		}
		repackGroups(typ, rows, cols/blockElems(typ), 0, (rows+PackRows-1)/PackRows, src, want)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: split repack differs from one worker's", typ)
		}
	}
}

// TestQ6KDecodeMatchesElem checks the whole-block decoder against the
// per-element one on random blocks.
func TestQ6KDecodeMatchesElem(t *testing.T) {
	r := newRand(t)
	blk := make([]byte, 210)
	for range 100 {
		for i := range blk {
			blk[i] = byte(r.Uint32())
		}
		var q [256]uint8
		q6kDecode(blk, &q)
		for e := range q {
			if want := q6kElem(blk, e); q[e] != want {
				t.Fatalf("element %d: %d, want %d", e, q[e], want)
			}
		}
	}
}

// q6kElem is element e (0..255) of a Q6_K block as an unsigned 6-bit q.
func q6kElem(blk []byte, e int) uint8 {
	h, c, l := e/128, (e%128)/32, e%32
	ql, qh := blk[64*h:], blk[128+32*h:]
	lo := ql[l+32*(c%2)]
	if c >= 2 {
		lo >>= 4
	}
	return lo&0x0f | (qh[l]>>(2*c)&3)<<4
}

// q4kElem is element e (0..255) of a Q4_K block's 4-bit quants.
func q4kElem(qs []byte, e int) uint8 {
	chunk, p := e/64, e%64
	if p < 32 {
		return qs[32*chunk+p] & 0x0f
	}
	return qs[32*chunk+p-32] >> 4
}

// TestRepackQ5KRoundTrip reads every quant of the packed Q5_K layout back
// (low bits and mask bit) and compares it with the GGUF block's 5-bit
// quant; d, dmin, scales and mins are Q4_K's (TestRepackQ4KRoundTrip).
func TestRepackQ5KRoundTrip(t *testing.T) {
	r := newRand(t)
	const n, nRows, nb = 512, 21, 2
	src := quantized(t, r, gguf.TypeQ5_K, n*nRows)
	p, err := Repack(gguf.TypeQ5_K, nRows, n, src)
	require.NoError(t, err)
	for row := range 32 {
		for b := range nb {
			blk := p[((row/PackRows)*nb+b)*q5kGroupBytes:]
			lane, off := row%PackRows, (row*nb+b)*q5kBlockBytes
			orig := make([]byte, q5kBlockBytes)
			if row < nRows {
				orig = src[off : off+q5kBlockBytes]
			}
			for s := range kSubBlocks {
				for e := range kSubBlockElems {
					require.Equal(t, q5kElem(orig, 32*s+e), packedQ5KQuant(blk, lane, s, e), "row %d block %d elem %d", row, b, 32*s+e)
				}
			}
		}
	}
}

// q5kElem is element e's 5-bit quant of a GGUF Q5_K block: its nibble as
// in Q4_K, plus 16 if bit e/32 of qh[e%32] is set.
func q5kElem(blk []byte, e int) uint8 {
	return q4kElem(blk[48:], e) + 16*(blk[16+e%32]>>(e/32)&1)
}

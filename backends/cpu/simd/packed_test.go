package simd

import (
	"math"
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// TestPackedGemm multiplies fresh random weights, repacked, by packed
// activations with every variant and compares each product with
// quant.VecDot on the original rows; row counts leave partial groups,
// token counts partial token groups, and the gaps of dst stay poisoned.
func TestPackedGemm(t *testing.T) {
	r := newRand(t)
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ8_0} {
		for _, sh := range [][3]int{{32, 1, 1}, {64, 15, 2}, {96, 16, 8}, {256, 17, 9}, {160, 33, 17}, {2048, 50, 3}} {
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
				acts[i] = quantized(t, r, gguf.TypeQ8_0, n)
			}
			forEachVariant(t, func(t *testing.T) {
				act := nanBytes(PackActBytes(n, nTok))
				for i, a := range acts {
					PackActRow(typ, a, n, i, nTok, act)
				}
				stride := nRows + 3
				dst := nanRow(nTok * stride)
				PackedGemm(typ)(n, packed, nRows, act, nTok, dst, stride)
				for tok := range nTok {
					for row := range stride {
						got := dst[tok*stride+row]
						if row >= nRows {
							if !math.IsNaN(float64(got)) {
								t.Fatalf("%s %v: gap [%d,%d] overwritten", typ, sh, tok, row)
							}
							continue
						}
						want := quant.VecDot(typ, n, rows[row], acts[tok])
						bound := dotBound(dequant(t, typ, rows[row], n), dequant(t, gguf.TypeQ8_0, acts[tok], n), n/32)
						if d := math.Abs(float64(got - want)); !(d <= bound) {
							t.Fatalf("%s %v: [tok %d, row %d] = %g, want %g (bound %g)", typ, sh, tok, row, got, want, bound)
						}
					}
				}
			})
		}
	}
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

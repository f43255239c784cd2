package quant

import (
	"encoding/binary"
	"testing"

	"github.com/weft-ml/weft/gguf"
)

// Hand-made blocks, laid out from the format description (ggml-common.h),
// with values computed in the test.

func checkDequant(t *testing.T, typ gguf.TensorType, block []byte, want []float32) {
	t.Helper()
	got := make([]float32, len(want))
	if err := Dequantize(typ, block, got); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s element %d: got %v want %v", typ, i, got[i], want[i])
		}
	}
}

func le16(b []byte, off int, v uint16) { binary.LittleEndian.PutUint16(b[off:], v) }

func TestHandMadeQ4_0(t *testing.T) {
	b := make([]byte, 18)
	le16(b, 0, 0x3800) // d = 0.5
	want := make([]float32, 32)
	for j := 0; j < 16; j++ {
		b[2+j] = byte(j) | byte(15-j)<<4
		want[j], want[j+16] = float32(j-8)*0.5, float32(15-j-8)*0.5
	}
	checkDequant(t, gguf.TypeQ4_0, b, want)
}

func TestHandMadeQ5_0AndQ5_1(t *testing.T) {
	const qh = 0xa5a5f00f
	for _, typ := range []gguf.TensorType{gguf.TypeQ5_0, gguf.TypeQ5_1} {
		off, b := 2, make([]byte, 22)
		if typ == gguf.TypeQ5_1 {
			off, b = 4, make([]byte, 24)
			le16(b, 2, 0xbc00) // m = -1
		}
		le16(b, 0, 0x3400) // d = 0.25
		binary.LittleEndian.PutUint32(b[off:], qh)
		want := make([]float32, 32)
		for j := 0; j < 16; j++ {
			b[off+4+j] = byte(j) | byte(15-j)<<4
			lo := j | (qh>>j&1)<<4
			hi := (15 - j) | (qh>>(j+16)&1)<<4
			if typ == gguf.TypeQ5_0 {
				want[j], want[j+16] = float32(lo-16)*0.25, float32(hi-16)*0.25
			} else {
				want[j], want[j+16] = float32(lo)*0.25-1, float32(hi)*0.25-1
			}
		}
		checkDequant(t, typ, b, want)
	}
}

func TestHandMadeQ8_0(t *testing.T) {
	b := make([]byte, 34)
	le16(b, 0, 0xc000) // d = -2
	want := make([]float32, 32)
	for j := range want {
		q := int8(j*8 - 128)
		b[2+j] = byte(q)
		want[j] = float32(q) * -2
	}
	checkDequant(t, gguf.TypeQ8_0, b, want)
}

// packScaleMin6 writes 8 six-bit scales and mins the Q4_K/Q5_K way.
func packScaleMin6(b []byte, sc, m [8]uint8) {
	for j := 0; j < 4; j++ {
		b[j] = sc[j] | (sc[j+4]>>4)<<6
		b[j+4] = m[j] | (m[j+4]>>4)<<6
		b[j+8] = sc[j+4]&0xf | (m[j+4]&0xf)<<4
	}
}

func TestHandMadeQ4KAndQ5K(t *testing.T) {
	sc := [8]uint8{1, 2, 3, 4, 33, 45, 63, 17}
	m := [8]uint8{0, 1, 2, 3, 40, 50, 60, 62}
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_K, gguf.TypeQ5_K} {
		b := make([]byte, typ.BlockBytes())
		le16(b, 0, 0x3c00) // d = 1
		le16(b, 2, 0x3800) // dmin = 0.5
		packScaleMin6(b[4:16], sc, m)
		qs := b[16:]
		if typ == gguf.TypeQ5_K {
			qs = b[48:]
			for l := 0; l < 32; l++ {
				b[16+l] = byte(l * 37) // high bits: bit k of qh[l] belongs to element 32k+l
			}
		}
		for l := range qs[:128] {
			qs[l] = 0xc3 // low nibble 3 for the first 32 of each 64, high nibble 12 for the next
		}
		want := make([]float32, 256)
		for i := range want {
			q := 3
			if i%64 >= 32 {
				q = 12
			}
			if typ == gguf.TypeQ5_K && (b[16+i%32]>>(i/32))&1 == 1 {
				q += 16
			}
			j := i / 32
			want[i] = float32(sc[j])*float32(q) - 0.5*float32(m[j])
		}
		checkDequant(t, typ, b, want)
	}
}

// q6Level is the level given to element i in the Q6_K test block.
func q6Level(i int) int { return (i*7 + i/64) % 64 }

func TestHandMadeQ6K(t *testing.T) {
	b := make([]byte, 210)
	for i := 0; i < 256; i++ {
		h, r := i/128, i%128
		l, quarter := r%32, r/32
		lv := q6Level(i)
		lowIdx := h*64 + l + (quarter%2)*32
		b[lowIdx] |= byte(lv&0xf) << (4 * (quarter / 2))
		b[128+h*32+l] |= byte(lv>>4) << (2 * quarter)
	}
	for j := 0; j < 16; j++ {
		b[192+j] = byte(int8(j*9 - 70))
	}
	le16(b, 208, 0x3800) // d = 0.5
	want := make([]float32, 256)
	for i := range want {
		want[i] = 0.5 * float32(int8(b[192+i/16])) * float32(q6Level(i)-32)
	}
	checkDequant(t, gguf.TypeQ6_K, b, want)
}

// put2bit stores level lv (0..3) of element i the Q2_K/Q3_K way.
func put2bit(qs []byte, i, lv int) {
	qs[i/128*32+i%32] |= byte(lv) << (2 * (i % 128 / 32))
}

func TestHandMadeQ3K(t *testing.T) {
	b := make([]byte, 110)
	scale := func(j int) int { return j*4 - 29 } // -29..31
	for j := 0; j < 16; j++ {
		s := scale(j) + 32
		if j < 8 {
			b[96+j] |= byte(s & 0xf)
		} else {
			b[96+j-8] |= byte(s&0xf) << 4
		}
		b[96+8+j%4] |= byte(s>>4) << (2 * (j / 4))
	}
	le16(b, 108, 0x3c00) // d = 1
	want := make([]float32, 256)
	for i := range want {
		low, high := i%4, (i/3)%2
		put2bit(b[32:96], i, low)
		b[i%32] |= byte(high) << (i / 32)
		want[i] = float32(scale(i/16)) * float32(low-4+4*high)
	}
	checkDequant(t, gguf.TypeQ3_K, b, want)
}

func TestHandMadeQ2K(t *testing.T) {
	b := make([]byte, 84)
	for j := 0; j < 16; j++ {
		b[j] = byte(j) | byte(15-j)<<4
	}
	le16(b, 80, 0x3800) // d = 0.5
	le16(b, 82, 0x3400) // dmin = 0.25
	want := make([]float32, 256)
	for i := range want {
		lv := (i + i/16) % 4
		put2bit(b[16:80], i, lv)
		j := i / 16
		want[i] = 0.5*float32(j)*float32(lv) - 0.25*float32(15-j)
	}
	checkDequant(t, gguf.TypeQ2_K, b, want)
}

func TestHandMadeQ8K(t *testing.T) {
	b := make([]byte, 292)
	binary.LittleEndian.PutUint32(b, 0x3e000000) // d = 0.125
	want := make([]float32, 256)
	for i := range want {
		q := int8(i - 128)
		b[4+i] = byte(q)
		want[i] = 0.125 * float32(q)
	}
	checkDequant(t, gguf.TypeQ8_K, b, want)
	// Quantize fills the 16-element sums.
	q, _ := QuantizeAlloc(gguf.TypeQ8_K, want)
	for j := 0; j < 16; j++ {
		var sum int
		for _, v := range q[4+16*j : 4+16*j+16] {
			sum += int(int8(v))
		}
		if got := int(int16(binary.LittleEndian.Uint16(q[260+2*j:]))); got != sum {
			t.Fatalf("bsum %d: got %d want %d", j, got, sum)
		}
	}
}

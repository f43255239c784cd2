package simd

import (
	"encoding/binary"
	"math"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// The packed Q4_K layout ("q4_kx16") interleaves 16 rows like the Q4_0
// one, per super-block of 256 columns, with the 6-bit scales and mins
// unpacked to bytes at repack time so the kernel only widens them:
//
//	[0:32]     the 16 rows' d, binary16, row order
//	[32:64]    the 16 rows' dmin, binary16
//	[64:192]   scales: 16 bytes per sub-block s (0..7), row order
//	[192:320]  mins: 32 bytes per sub-block pair i (0..3); byte 2r+e is
//	           row r's min of sub-block 2i+e (VPMOVZXBW makes int16 pairs)
//	[320:2368] quants: per sub-block s, words k = 0..3 of 64 bytes; byte
//	           4r+j of word k is row r's element 4k+j (low nibble) and
//	           element 16+4k+j (high nibble) of sub-block s
//
// So that one word splits into two VPDPBUSD operands of the same
// sub-block. A group-block is 2368 bytes, 64 more than the 16 GGUF blocks.
//
// Its packed activation block (per token, per super-block, from Q8_K):
// [0:4] d float32, [4:20] the eight sub-block sums of the quants as int16,
// [20:32] zero, [32:288] the 256 quants.

const (
	q4kBlockBytes  = 144
	q8kBlockBytes  = 292
	kGroupBytes    = 2368
	kActBlock      = 288
	kQuantsOffset  = 320
	kSubBlocks     = 8
	kSubBlockElems = 32
)

// blockElems is the number of columns one block of a packed type spans.
func blockElems(t gguf.TensorType) int { return int(t.BlockSize()) }

// scaleMinQ4K unpacks sub-block j's 6-bit scale and min from the 12
// scale bytes of a Q4_K block (local: the quant package keeps its own
// unexported).
func scaleMinQ4K(q []byte, j int) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// packBlockQ4K writes one Q4_K block of the row in lane into its group-block.
func packBlockQ4K(blk, dst []byte, lane int) {
	copy(dst[2*lane:], blk[0:2])
	copy(dst[32+2*lane:], blk[2:4])
	scales, qs := blk[4:16], blk[16:144]
	for s := range kSubBlocks {
		sc, m := scaleMinQ4K(scales, s)
		dst[64+16*s+lane] = sc
		dst[192+32*(s/2)+2*lane+s%2] = m
		// Byte j of word k holds elements 4k+j and 16+4k+j of sub-block
		// s: four at once from the nibbles of the block's byte s/2 row.
		base, shift := 32*(s/2), 4*(s%2)
		for k := range 4 {
			lo := binary.LittleEndian.Uint32(qs[base+4*k:]) >> shift & 0x0f0f0f0f
			hi := binary.LittleEndian.Uint32(qs[base+16+4*k:]) >> shift & 0x0f0f0f0f
			binary.LittleEndian.PutUint32(dst[kQuantsOffset+256*s+64*k+4*lane:], lo|hi<<4)
		}
	}
}

// packActQ4K is a Q4_K activation block from one Q8_K block.
func packActQ4K(src, dst []byte) {
	copy(dst[0:4], src[0:4])
	for s := range kSubBlocks {
		sum := int16(binary.LittleEndian.Uint16(src[260+4*s:])) + int16(binary.LittleEndian.Uint16(src[262+4*s:]))
		binary.LittleEndian.PutUint16(dst[4+2*s:], uint16(sum))
	}
	clear(dst[20:32])
	copy(dst[32:], src[4:260])
}

// dotBlockQ4K adds one lane's super-block blk against activation block a
// to acc as the kernel does: the mins term first, then sub-block by
// sub-block.
func dotBlockQ4K(acc float32, blk []byte, lane int, a []byte) float32 {
	return dotBlockK45(acc, blk, lane, a, packedQ4KQuant)
}

// dotBlockK45 is dotBlockQ4K with element e of sub-block s read by elem
// (Q4_K's and Q5_K's kernels differ only there).
func dotBlockK45(acc float32, blk []byte, lane int, a []byte, elem func(blk []byte, lane, s, e int) uint8) float32 {
	da := math.Float32frombits(binary.LittleEndian.Uint32(a))
	d := quant.FP16ToFP32(binary.LittleEndian.Uint16(blk[2*lane:]))
	dmin := quant.FP16ToFP32(binary.LittleEndian.Uint16(blk[32+2*lane:]))
	var mins int32
	for s := range kSubBlocks {
		m := int32(blk[192+32*(s/2)+2*lane+s%2])
		mins += m * int32(int16(binary.LittleEndian.Uint16(a[4+2*s:])))
	}
	acc -= float32(mins) * (dmin * da)
	for s := range kSubBlocks {
		var sum int32
		for e := range kSubBlockElems {
			sum += int32(elem(blk, lane, s, e)) * int32(int8(a[32+32*s+e]))
		}
		acc += float32(sum) * (d * float32(blk[64+16*s+lane]) * da)
	}
	return acc
}

// packedQ4KQuant is element e of sub-block s of a lane's packed block.
func packedQ4KQuant(blk []byte, lane, s, e int) uint8 {
	return subBlockNibble(blk[kQuantsOffset+256*s:], lane, e)
}

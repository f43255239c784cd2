package simd

import (
	"encoding/binary"
	"math"

	"github.com/weft-ml/weft/quant"
)

// The packed IQ4_XS layout ("iq4_xsx16") interleaves 16 rows per
// super-block of 256 columns, 2208 bytes (32 more than the 16 GGUF blocks):
//
//	[0:32]     the 16 rows' d, binary16, row order
//	[32:160]   scales: 16 bytes per sub-block s (0..7), row order, each the
//	           signed scale ls − 32 unpacked from scales_l and scales_h
//	[160:2208] indices: per sub-block s, words k = 0..3 of 64 bytes; bytes
//	           4r..4r+3 of word k are row r's GGUF bytes 16s+4k..16s+4k+3
//	           (low nibble: element 4k+j's index into the IQ4_NL levels,
//	           high nibble: element 16+4k+j's)
//
// The kernel looks the indices up as levels plus 128 (unsigned bytes for
// VPDPBUSD), so its packed activation block (per token, per super-block,
// from Q8_K) carries −128·Σa of each sub-block to start that sub-block's
// sum from: [0:4] d float32, [4:36] eight int32 −128·Σ32, [36:64] zero,
// [64:320] the 256 quants. The integer sums are exact, so the kernel's
// outputs are quant's dotIQ4XS bits: per super-block Σ scale·sum in int32,
// then acc += float(Σ)·(d·da).

const (
	iq4xsBlockBytes = 136
	iq4xsGroupBytes = 2208
	iq4xsActBlock   = 320
	iq4xsScales     = 32
	iq4xsQuants     = 160
	iq4xsActQuants  = 64
)

// iq4xsScale is sub-block s's 6-bit scale less 32 from a GGUF IQ4_XS block.
func iq4xsScale(blk []byte, s int) int8 {
	lo := blk[4+s/2] >> (4 * uint(s%2)) & 0xf
	hi := binary.LittleEndian.Uint16(blk[2:]) >> (2 * uint(s)) & 3
	return int8(lo|uint8(hi)<<4) - 32
}

// packBlockIQ4XS writes one IQ4_XS block of the row in lane into its group-block.
func packBlockIQ4XS(blk, dst []byte, lane int) {
	copy(dst[2*lane:], blk[0:2])
	for s := range kSubBlocks {
		dst[iq4xsScales+16*s+lane] = byte(iq4xsScale(blk, s))
		for k := range 4 {
			copy(dst[iq4xsQuants+256*s+64*k+4*lane:][:4], blk[8+16*s+4*k:])
		}
	}
}

// packActIQ4XS is an IQ4_XS activation block from one Q8_K block.
func packActIQ4XS(src, dst []byte) {
	copy(dst[0:4], src[0:4])
	for s := range kSubBlocks {
		sum := int32(int16(binary.LittleEndian.Uint16(src[260+4*s:]))) + int32(int16(binary.LittleEndian.Uint16(src[262+4*s:])))
		binary.LittleEndian.PutUint32(dst[4+4*s:], uint32(-128*sum))
	}
	clear(dst[36:iq4xsActQuants])
	copy(dst[iq4xsActQuants:], src[4:260])
}

// dotBlockIQ4XS adds one lane's super-block blk against activation block
// a to acc as the kernel does.
func dotBlockIQ4XS(acc float32, blk []byte, lane int, a []byte) float32 {
	levels := quant.IQ4Levels()
	var isum int32
	for s := range kSubBlocks {
		sum := int32(binary.LittleEndian.Uint32(a[4+4*s:]))
		for e := range kSubBlockElems {
			level := int32(levels[packedIQ4XSIndex(blk, lane, s, e)]) + 128
			sum += level * int32(int8(a[iq4xsActQuants+32*s+e]))
		}
		isum += int32(int8(blk[iq4xsScales+16*s+lane])) * sum
	}
	d := quant.FP16ToFP32(binary.LittleEndian.Uint16(blk[2*lane:]))
	da := math.Float32frombits(binary.LittleEndian.Uint32(a))
	return acc + float32(float32(d*da)*float32(isum))
}

// packedIQ4XSIndex is the level index of element e of sub-block s of a
// lane's packed block.
func packedIQ4XSIndex(blk []byte, lane, s, e int) uint8 {
	return subBlockNibble(blk[iq4xsQuants+256*s:], lane, e)
}

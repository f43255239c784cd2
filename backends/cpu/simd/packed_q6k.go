package simd

import (
	"encoding/binary"
	"math"

	"github.com/weft-ml/weft/quant"
)

// The packed Q6_K layout ("q6_kx16") interleaves 16 rows per super-block
// of 256 columns in exactly the bytes of the 16 GGUF blocks (3360):
//
//	[0:32]     the 16 rows' d, binary16, row order
//	[32:288]   scales: 32 bytes per pair i of 16-element groups (0..7);
//	           byte 2r+e is row r's scale of group 2i+e (VPMOVSXBW makes
//	           int16 pairs for VPDPWSSD)
//	[288:3360] per sub-block s of 32 elements (0..7), 384 bytes:
//	           four words k of low bits: byte 4r+j is row r's element 4k+j
//	           (low nibble) and 16+4k+j (high nibble), low four bits each;
//	           then two words of high bits: byte 4r+j of the first holds in
//	           bits 2k, 2k+1 the top two bits of element 4k+j, the second
//	           those of element 16+4k+j
//
// The quants are the unsigned 6-bit q (value q − 32). Its packed
// activation block (per token, per super-block, from Q8_K): [0:4] d
// float32, [4:36] the sixteen 16-element sums of the quants (int16, as in
// Q8_K), [36:64] zero, [64:320] the 256 quants.

const (
	q6kBlockBytes = 210
	q6kActBlock   = 320
	q6kQuants     = 288
	q6kSubBytes   = 384
)

// q6kDecode sets q[e] = q6kElem(blk, e) for the whole block, a half (128
// elements) at a time: one pass over its bytes instead of one lookup per
// element (repacking a 1.1B model's Q6_K tensors spent most time there).
func q6kDecode(blk []byte, q *[256]uint8) {
	for h := range 2 {
		ql, qh, out := blk[64*h:64*h+64], blk[128+32*h:128+32*h+32], q[128*h:128*h+128]
		for l := range 32 {
			a, b, c := ql[l], ql[l+32], qh[l]
			out[l] = a&0x0f | (c&3)<<4
			out[32+l] = b&0x0f | (c>>2&3)<<4
			out[64+l] = a>>4 | (c>>4&3)<<4
			out[96+l] = b>>4 | (c>>6&3)<<4
		}
	}
}

// packBlockQ6K writes one Q6_K block of the row in lane into its group-block.
func packBlockQ6K(blk, dst []byte, lane int) {
	copy(dst[2*lane:], blk[208:210])
	for g := range 16 {
		dst[32+32*(g/2)+2*lane+g%2] = blk[192+g]
	}
	var q [256]uint8
	q6kDecode(blk, &q)
	for s := range kSubBlocks {
		sub := dst[q6kQuants+q6kSubBytes*s:]
		for k := range 4 {
			for j := range 4 {
				lo, hi := q[32*s+4*k+j], q[32*s+16+4*k+j]
				sub[64*k+4*lane+j] = lo&0x0f | (hi&0x0f)<<4
				sub[256+4*lane+j] |= (lo >> 4) << (2 * k)
				sub[320+4*lane+j] |= (hi >> 4) << (2 * k)
			}
		}
	}
}

// packedQ6KQuant is element e of sub-block s of a lane's packed block.
func packedQ6KQuant(blk []byte, lane, s, e int) uint8 {
	sub := blk[q6kQuants+q6kSubBytes*s:]
	k, j := (e%16)/4, e%4
	high := sub[256+4*lane+j]
	if e >= 16 {
		high = sub[320+4*lane+j]
	}
	return subBlockNibble(sub, lane, e) | (high>>(2*k)&3)<<4
}

// packActQ6K is a Q6_K activation block from one Q8_K block.
func packActQ6K(src, dst []byte) {
	copy(dst[0:4], src[0:4])
	copy(dst[4:36], src[260:292])
	clear(dst[36:64])
	copy(dst[64:], src[4:260])
}

// dotBlockQ6K adds one lane's super-block blk against activation block a
// to acc as the kernel does: the offset term first, then group by group.
func dotBlockQ6K(acc float32, blk []byte, lane int, a []byte) float32 {
	da := math.Float32frombits(binary.LittleEndian.Uint32(a))
	d := quant.FP16ToFP32(binary.LittleEndian.Uint16(blk[2*lane:]))
	var off int32
	for g := range 16 {
		off += int32(q6kScale(blk, lane, g)) * int32(int16(binary.LittleEndian.Uint16(a[4+2*g:])))
	}
	acc -= float32(32*off) * (d * da)
	for g := range 16 {
		var sum int32
		for e := range 16 {
			el := 16*(g%2) + e
			sum += int32(packedQ6KQuant(blk, lane, g/2, el)) * int32(int8(a[64+16*g+e]))
		}
		acc += float32(sum) * (d * float32(q6kScale(blk, lane, g)) * da)
	}
	return acc
}

// q6kScale is the scale of group g of a lane's packed block.
func q6kScale(blk []byte, lane, g int) int8 {
	return int8(blk[32+32*(g/2)+2*lane+g%2])
}

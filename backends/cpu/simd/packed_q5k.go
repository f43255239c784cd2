package simd

// The packed Q5_K layout ("q5_kx16") is the packed Q4_K group-block of
// the quants' low four bits (d, dmin, scales and mins as there: Q5_K
// packs its scales and mins as Q4_K does), followed by the fifth bits as
// masks, 2880 bytes a group-block (16 GGUF blocks are 2816):
//
//	[0:2368]     the q4_kx16 group-block of the low four bits
//	[2368:2880]  per sub-block s, 64 bytes: eight little-endian uint64
//	             masks, mask 2k+h (word k, h = 0 for the low nibbles, 1
//	             for the high ones); its bit 4r+j is the fifth bit of row
//	             r's element 4k+j+16h of sub-block s, i.e. of the byte lane
//	             4r+j of the VPDPBUSD operand that word k's nibbles make
//
// so the kernel adds 16 under a mask (KMOVQ, masked VPADDB) to each
// operand that Q4_K's kernel builds, and the rest is Q4_K's: the same
// activation blocks (from Q8_K), mins term and scaling.

const (
	q5kBlockBytes = 176
	q5kGroupBytes = kGroupBytes + kSubBlocks*64
)

// packBlockQ5K writes one Q5_K block of the row in lane into its group-block.
func packBlockQ5K(blk, dst []byte, lane int) {
	// The low bits as a Q4_K block: d, dmin, scales, then the nibbles.
	var low [q4kBlockBytes]byte
	copy(low[:16], blk[:16])
	copy(low[16:], blk[48:176])
	packBlockQ4K(low[:], dst, lane)
	qh := blk[16:48]
	for s := range kSubBlocks {
		for m := range 8 {
			k, h := m/2, m%2
			masks := dst[kGroupBytes+64*s+8*m:]
			for j := range 4 {
				bit := 4*lane + j
				masks[bit/8] |= (qh[4*k+j+16*h] >> s & 1) << (bit % 8)
			}
		}
	}
}

// packedQ5KQuant is element e (0..31) of sub-block s of a lane's packed
// block: its low four bits as Q4_K's, plus 16 if its mask bit is set.
func packedQ5KQuant(blk []byte, lane, s, e int) uint8 {
	m := 2*((e%16)/4) + e/16
	bit := 4*lane + e%4
	hi := blk[kGroupBytes+64*s+8*m+bit/8] >> (bit % 8) & 1
	return packedQ4KQuant(blk, lane, s, e) + 16*hi
}

// dotBlockQ5K adds one lane's super-block blk against activation block a
// to acc as the kernel does (dotBlockQ4K's steps).
func dotBlockQ5K(acc float32, blk []byte, lane int, a []byte) float32 {
	return dotBlockK45(acc, blk, lane, a, packedQ5KQuant)
}

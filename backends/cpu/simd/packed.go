package simd

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// The packed layouts interleave PackRows weight rows (Q4_K, Q5_K, Q6_K
// and IQ4_XS: see packed_k.go, packed_q5k.go, packed_q6k.go and
// packed_iq4xs.go; here Q4_0 and Q8_0) so that one 512-bit load holds
// four quants of each of 16 rows: VPDPBUSD then multiplies all 16 rows by
// four activation bytes broadcast to every lane, and the 16 result lanes
// are the 16 rows' sums (no horizontal reduction, one store per token).
// Sixteen rows fill exactly one zmm of int32 lanes; eight (as llama.cpp
// uses with ymm) would leave half of each AVX-512 instruction idle. The
// layout, per group of 16 rows (rows padded with zero bytes to a multiple
// of 16), per block b of 32 columns:
//
//	[0:32]   the 16 rows' scales d, binary16, row order
//	[32:...] words j = 0..W-1 of 64 bytes; bytes 4r..4r+3 of word j are
//	         row r's quant bytes 4j..4j+3 of the block
//
// Q4_0 (W = 4): the row's nibble bytes unchanged (low nibble element i,
// high nibble element i+16). Q8_0 (W = 8): each quant plus 128 as an
// unsigned byte. A group-block is 16 GGUF blocks long, so a packed tensor
// is exactly its GGUF size when rows is a multiple of 16. Groups are
// stored one after another, each with all its blocks, so a GEMV streams
// each group from one pointer.
//
// The kernels read activations in a packed form too (PackActRow): per
// block da as float32, −c·Σa as int32 (c = 8 for Q4_0, 128 for Q8_0, the
// offset that makes the weights unsigned) and the 32 quants; the blocks of
// up to packTokens tokens are interleaved so one pointer walks them.

// PackRows is how many weight rows one packed group interleaves.
const PackRows = 16

const (
	packTokens   = 8  // tokens per interleaved activation group
	packActBlock = 40 // bytes of one packed activation block
)

// packedNames maps each packed layout's name to its weight type.
var packedNames = map[string]gguf.TensorType{
	"q4_0x16":   gguf.TypeQ4_0,
	"q8_0x16":   gguf.TypeQ8_0,
	"q4_kx16":   gguf.TypeQ4_K,
	"q5_kx16":   gguf.TypeQ5_K,
	"q6_kx16":   gguf.TypeQ6_K,
	"iq4_xsx16": gguf.TypeIQ4_XS,
}

// PackedLayoutName names the packed layout of weights of type t, or ""
// if there is none.
func PackedLayoutName(t gguf.TensorType) string {
	for name, pt := range packedNames {
		if pt == t {
			return name
		}
	}
	return ""
}

// PackedLayoutType returns the weight type of the named packed layout.
func PackedLayoutType(name string) (gguf.TensorType, bool) {
	t, ok := packedNames[name]
	return t, ok
}

// HasPackedKernels reports whether the active variant has assembly
// kernels for the packed layout of t (the pure-Go kernel always works, but
// only the assembly ones make repacking worthwhile).
func HasPackedKernels(t gguf.TensorType) bool {
	_, ok := active.packed[t]
	return ok
}

// packedOffset is the constant c that makes the packed weights unsigned.
func packedOffset(t gguf.TensorType) int32 {
	if t == gguf.TypeQ4_0 {
		return 8
	}
	return 128
}

// superFormat is a packed layout over 256-column super-blocks, fed from
// Q8_K activations (each one's file has its format): the bytes of its
// group-block and of its activation block, how one GGUF block of a row is
// packed, how one Q8_K block becomes an activation block, and the pure-Go
// model of its tiles for one super-block, which adds to acc in the tiles'
// order.
type superFormat struct {
	groupBytes, actBlock int
	packBlock            func(blk, dst []byte, lane int)
	packAct              func(q8k, dst []byte)
	dot                  func(acc float32, blk []byte, lane int, a []byte) float32
}

// superFormats are the super-block layouts; Q4_0 and Q8_0 are this file's.
var superFormats = map[gguf.TensorType]superFormat{
	gguf.TypeQ4_K:   {kGroupBytes, kActBlock, packBlockQ4K, packActQ4K, dotBlockQ4K},
	gguf.TypeQ5_K:   {q5kGroupBytes, kActBlock, packBlockQ5K, packActQ4K, dotBlockQ5K},
	gguf.TypeQ6_K:   {PackRows * q6kBlockBytes, q6kActBlock, packBlockQ6K, packActQ6K, dotBlockQ6K},
	gguf.TypeIQ4_XS: {iq4xsGroupBytes, iq4xsActBlock, packBlockIQ4XS, packActIQ4XS, dotBlockIQ4XS},
}

// groupBytes is the size of one packed group's block (16 GGUF blocks, or
// a superFormat's).
func groupBytes(t gguf.TensorType) int {
	if f, ok := superFormats[t]; ok {
		return f.groupBytes
	}
	return PackRows * int(t.BlockBytes())
}

// actBlockBytes is the size of one packed activation block for weights t.
func actBlockBytes(t gguf.TensorType) int {
	if f, ok := superFormats[t]; ok {
		return f.actBlock
	}
	return packActBlock
}

// actBlockAt is token t's activation block b (of nb a token, size bytes
// each) in act, the buffer of all nTok tokens: tokens are interleaved per
// block in groups of packTokens (the last group shorter).
func actBlockAt(act []byte, size, nb, b, t, nTok int) []byte {
	t0 := t - t%packTokens
	i := t0*nb + b*min(packTokens, nTok-t0) + t - t0
	return act[i*size : (i+1)*size]
}

// subBlockNibble is element e (0..31) of a lane's sub-block in words, the
// arrangement Q4_K's, Q6_K's low bits and IQ4_XS's share: four 64-byte
// words, byte 4r+j of word k holding row r's element 4k+j in its low
// nibble and element 16+4k+j in its high one.
func subBlockNibble(words []byte, lane, e int) uint8 {
	q := words[64*((e%16)/4)+4*lane+e%4]
	if e >= 16 {
		return q >> 4
	}
	return q & 0x0f
}

// PackedSize is the byte size of a rows × cols weight of type t packed.
func PackedSize(t gguf.TensorType, rows, cols int) (int, error) {
	if PackedLayoutName(t) == "" {
		return 0, fmt.Errorf("no packed layout for %s", t)
	}
	be := blockElems(t)
	if rows <= 0 || cols <= 0 || cols%be != 0 {
		return 0, fmt.Errorf("cannot pack a %d × %d %s matrix: columns must be a positive multiple of %d", rows, cols, t, be)
	}
	groups := (rows + PackRows - 1) / PackRows
	return groups * (cols / be) * groupBytes(t), nil
}

// PackedRowOffset is where, in a packed rows × cols weight of type t, the
// group holding row r0 (a multiple of PackRows) starts.
func PackedRowOffset(t gguf.TensorType, r0, cols int) int {
	return r0 / PackRows * (cols / blockElems(t)) * groupBytes(t)
}

// Repack rearranges a rows × cols weight of type t (GGUF row order) into
// its packed layout.
func Repack(t gguf.TensorType, rows, cols int, src []byte) ([]byte, error) {
	size, err := PackedSize(t, rows, cols)
	if err != nil {
		return nil, err
	}
	out := make([]byte, size)
	return out, RepackInto(t, rows, cols, src, out)
}

// RepackInto is Repack into dst, which must be PackedSize bytes long.
func RepackInto(t gguf.TensorType, rows, cols int, src, dst []byte) error {
	size, err := PackedSize(t, rows, cols)
	if err != nil {
		return err
	}
	bb, nb := int(t.BlockBytes()), cols/blockElems(t)
	if len(src) != rows*nb*bb || len(dst) != size {
		return fmt.Errorf("packing %s: %d bytes into %d for a %d × %d matrix, want %d into %d", t, len(src), len(dst), rows, cols, rows*nb*bb, size)
	}
	// Groups are independent and far apart in dst: share them among the
	// cores (compiling a 1.1B model repacks 600 MB).
	groups := (rows + PackRows - 1) / PackRows
	workers := min(runtime.GOMAXPROCS(0), max(1, len(dst)>>22)) // ≥ 4 MiB each
	var wg sync.WaitGroup
	for w := range workers {
		g0, g1 := groups*w/workers, groups*(w+1)/workers
		wg.Go(func() { repackGroups(t, rows, nb, g0, g1, src, dst) })
	}
	wg.Wait()
	return nil
}

// repackGroups packs row groups [g0, g1) of a matrix of nb blocks per row.
func repackGroups(t gguf.TensorType, rows, nb, g0, g1 int, src, out []byte) {
	bb, gb := int(t.BlockBytes()), groupBytes(t)
	clear(out[g0*nb*gb : g1*nb*gb])
	for r := g0 * PackRows; r < min(rows, g1*PackRows); r++ {
		g, lane := r/PackRows, r%PackRows
		for b := 0; b < nb; b++ {
			blk := src[(r*nb+b)*bb : (r*nb+b+1)*bb]
			dst := out[(g*nb+b)*gb : (g*nb+b+1)*gb]
			if f, ok := superFormats[t]; ok {
				f.packBlock(blk, dst, lane)
				continue
			}
			copy(dst[2*lane:], blk[:2])
			packQuants(t, blk[2:], dst[2*PackRows:], lane)
		}
	}
}

// packQuants spreads one block's quant bytes over the words of its group.
func packQuants(t gguf.TensorType, qs, words []byte, lane int) {
	for j := 0; j < len(qs)/4; j++ {
		w := words[64*j+4*lane : 64*j+4*lane+4]
		copy(w, qs[4*j:4*j+4])
		if t == gguf.TypeQ8_0 {
			for i := range w {
				w[i] ^= 0x80
			}
		}
	}
}

// PackActBytes is the size of nTok tokens' packed activations of n columns,
// enough for every packed type (per 256 columns Q4_K's take 288 bytes,
// Q6_K's and IQ4_XS's 320, as Q4_0's and Q8_0's).
func PackActBytes(n, nTok int) int { return nTok * (n / 32) * packActBlock }

// PackActRow writes token t's packed activation for weights of type w
// from its row q8 of n columns (Q8_0, or Q8_K for Q4_K, Q5_K, Q6_K and IQ4_XS)
// into act, the buffer of all nTok tokens of the batch. Tokens are
// independent: rows may be packed concurrently.
func PackActRow(w gguf.TensorType, q8 []byte, n, t, nTok int, act []byte) {
	if f, ok := superFormats[w]; ok {
		nb := n / 256
		for b := range nb {
			f.packAct(q8[b*q8kBlockBytes:(b+1)*q8kBlockBytes], actBlockAt(act, f.actBlock, nb, b, t, nTok))
		}
		return
	}
	nb := n / 32
	c := packedOffset(w)
	for b := 0; b < nb; b++ {
		src := q8[b*34 : b*34+34]
		dst := actBlockAt(act, packActBlock, nb, b, t, nTok)
		da := quant.FP16ToFP32(binary.LittleEndian.Uint16(src))
		binary.LittleEndian.PutUint32(dst, math.Float32bits(da))
		binary.LittleEndian.PutUint32(dst[4:], uint32(-c*blockSum(src[2:])))
		copy(dst[8:], src[2:])
	}
}

// blockSum adds 32 signed bytes, eight at a time: flipping the sign bits
// makes them unsigned (a+128), and pairwise masked adds sum them in lanes.
func blockSum(q []byte) int32 {
	const flip, lo8, lo16 = 0x8080808080808080, 0x00ff00ff00ff00ff, 0x0000ffff0000ffff
	var s uint64
	for i := 0; i < 32; i += 8 {
		x := binary.LittleEndian.Uint64(q[i:]) ^ flip
		x = x&lo8 + x>>8&lo8
		s += x&lo16 + x>>16&lo16
	}
	s = s&0xffffffff + s>>32
	return int32(s) - 32*128
}

// PackedGemmFunc sets dst[t*dstStride + r] to the dot product of packed
// weight row r (rows [0, nRows) of w, which starts at a group) with token
// t of the packed activations act (nTok tokens, n columns).
type PackedGemmFunc = func(n int, w []byte, nRows int, act []byte, nTok int, dst []float32, dstStride int)

// PackedGemm returns the kernel for weights of type t in their packed
// layout: assembly where the variant has it, else pure Go.
func PackedGemm(t gguf.TensorType) PackedGemmFunc {
	if f, ok := active.packed[t]; ok {
		return f
	}
	return func(n int, w []byte, nRows int, act []byte, nTok int, dst []float32, dstStride int) {
		packedGemmGo(t, n, w, nRows, act, nTok, dst, dstStride)
	}
}

// packedGemmGo is the reference on the packed layout: integer block sums,
// then acc += float(sum)·(dw·da) block by block, as the kernels do.
func packedGemmGo(t gguf.TensorType, n int, w []byte, nRows int, act []byte, nTok int, dst []float32, dstStride int) {
	nb, gb := n/blockElems(t), groupBytes(t)
	for g := 0; g*PackRows < nRows; g++ {
		grp := w[g*nb*gb : (g+1)*nb*gb]
		for r := g * PackRows; r < min(nRows, (g+1)*PackRows); r++ {
			for tok := 0; tok < nTok; tok++ {
				dst[tok*dstStride+r] = packedDot(t, grp, r%PackRows, nb, act, tok, nTok)
			}
		}
	}
}

// packedDot is one row (lane) of a group against one token, any layout.
func packedDot(t gguf.TensorType, grp []byte, lane, nb int, act []byte, tok, nTok int) float32 {
	f, ok := superFormats[t]
	if !ok {
		return packedDotGo(t, grp, lane, nb, act, tok, nTok)
	}
	var acc float32
	for b := range nb {
		acc = f.dot(acc, grp[b*f.groupBytes:(b+1)*f.groupBytes], lane, actBlockAt(act, f.actBlock, nb, b, tok, nTok))
	}
	return acc
}

// packedDotGo is one row (lane) of a group against one token.
func packedDotGo(t gguf.TensorType, grp []byte, lane, nb int, act []byte, tok, nTok int) float32 {
	gb := groupBytes(t)
	var acc float32
	for b := 0; b < nb; b++ {
		blk := grp[b*gb : (b+1)*gb]
		a := actBlockAt(act, packActBlock, nb, b, tok, nTok)
		sum := int32(binary.LittleEndian.Uint32(a[4:]))
		for i := 0; i < 32; i++ {
			sum += int32(packedQuant(t, blk, lane, i)) * int32(int8(a[8+i]))
		}
		dw := quant.FP16ToFP32(binary.LittleEndian.Uint16(blk[2*lane:]))
		da := math.Float32frombits(binary.LittleEndian.Uint32(a))
		acc += float32(sum) * (dw * da)
	}
	return acc
}

// packedQuant is the unsigned quant of element i of a lane's block.
func packedQuant(t gguf.TensorType, blk []byte, lane, i int) uint8 {
	words := blk[2*PackRows:]
	if t == gguf.TypeQ8_0 {
		return words[64*(i/4)+4*lane+i%4]
	}
	j := i % 16
	q := words[64*(j/4)+4*lane+j%4]
	if i >= 16 {
		return q >> 4
	}
	return q & 0x0f
}

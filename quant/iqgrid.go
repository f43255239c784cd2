package quant

import (
	"encoding/binary"
	"math/bits"

	"github.com/weft-ml/weft/gguf"
)

// Shared parts of the lattice ("grid") formats IQ2_XXS, IQ2_XS, IQ2_S,
// IQ3_XXS, IQ3_S, IQ1_S and IQ1_M. Groups of 8 (IQ2, IQ1) or 4 (IQ3)
// magnitudes are stored as an index into a fixed table of points
// (iqgrids.go); signs come separately, for IQ2_XXS, IQ2_XS and IQ3_XXS as a
// 7-bit code whose eighth sign is the parity of the other seven (an even
// number of minus signs per group of 8). These formats are read-only: their
// quantizers search the lattice against an importance matrix, which weft
// does not implement (see WriteError).

// ksigns expands a 7-bit sign code to 8 sign bits: bit 7 makes the count
// of set bits even (ksigns_iq2xs of ggml-common.h, computed).
func ksigns(code uint32) uint8 {
	c := uint8(code & 127)
	return c | uint8(bits.OnesCount8(c)&1)<<7
}

// gridByte returns value j (0..7) of a uint64 lattice point.
func gridByte(p uint64, j int) int32 { return int32(uint8(p >> (8 * uint(j)))) }

// gridByte4 returns value j (0..3) of a uint32 lattice point.
func gridByte4(p uint32, j int) int32 { return int32(uint8(p >> (8 * uint(j)))) }

// signed applies sign bit j of s to v.
func signed(v int32, s uint8, j int) int32 {
	if s>>uint(j)&1 != 0 {
		return -v
	}
	return v
}

// signedF is signed for a float32 value, as ggml multiplies by ±1.
func signedF(v float32, s uint8, j int) float32 {
	if s>>uint(j)&1 != 0 {
		return -v
	}
	return v
}

func u16(b []byte, off int) uint32 { return uint32(binary.LittleEndian.Uint16(b[off:])) }
func u32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }

// q8kSub returns the 32 int8 activations of sub-block ib of a Q8_K block.
func q8kSub(q8 []byte, ib int) []byte { return q8[32*ib : 32*ib+32] }

// LatticeGrid returns a copy of the lattice points of an IQ2, IQ3 or IQ1
// weight type, for kernels and code generators that look points up
// themselves (the Vulkan shaders' tables are generated from it): one
// point per entry, value j in byte j (little-endian), 8 values per point
// for the IQ2 and IQ1 types and 4 for IQ3 (the upper bytes zero); IQ1's
// values are int8 (−1 is 0xff). ok is false for any other type.
func LatticeGrid(t gguf.TensorType) (points []uint64, values int, ok bool) {
	widen := func(p []uint32) []uint64 {
		out := make([]uint64, len(p))
		for i, v := range p {
			out[i] = uint64(v)
		}
		return out
	}
	switch t {
	case gguf.TypeIQ2_XXS:
		return append([]uint64(nil), iq2xxsGrid[:]...), 8, true
	case gguf.TypeIQ2_XS:
		return append([]uint64(nil), iq2xsGrid[:]...), 8, true
	case gguf.TypeIQ2_S:
		return append([]uint64(nil), iq2sGrid[:]...), 8, true
	case gguf.TypeIQ3_XXS:
		return widen(iq3xxsGrid[:]), 4, true
	case gguf.TypeIQ3_S:
		return widen(iq3sGrid[:]), 4, true
	case gguf.TypeIQ1_S, gguf.TypeIQ1_M:
		return append([]uint64(nil), iq1sGrid[:]...), 8, true
	}
	return nil, 0, false
}

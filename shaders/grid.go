package shaders

import (
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// GridTable returns the lattice table that the shaders of an IQ1/IQ2/IQ3
// weight type (get_rows_*, matvec_*) read at their last binding, a storage
// buffer the host uploads: quant.LatticeGrid's points, one IQ2 point in two
// words (a byte per value), one IQ3 point in one, and for IQ1, whose values
// are −1, 0 and 1, two points per word (16 bits each, 2 bits per value
// holding value+1: 4 KiB for its 2048 points). ok is false for a type
// without a table.
func GridTable(t gguf.TensorType) (words []uint32, ok bool) {
	points, values, ok := quant.LatticeGrid(t)
	if !ok {
		return nil, false
	}
	if t == gguf.TypeIQ1_S || t == gguf.TypeIQ1_M {
		return tritWords(points), true
	}
	for _, p := range points {
		words = append(words, uint32(p))
		if values == 8 {
			words = append(words, uint32(p>>32))
		}
	}
	return words, true
}

// tritWords packs 8-value points of −1, 0, 1 (quant's TestGridTables
// checks the set) two to a word.
func tritWords(points []uint64) []uint32 {
	words := make([]uint32, (len(points)+1)/2)
	for i, p := range points {
		var h uint32
		for j := range 8 {
			h |= uint32(int8(p>>(8*j))+1) & 3 << (2 * j)
		}
		words[i/2] |= h << (16 * (i % 2))
	}
	return words
}

package synth

import (
	"sort"
	"strconv"
	"strings"
)

// layerOf returns N for a name "blk.N.…", or -1.
func layerOf(name string) int {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return -1
	}
	digits, _, ok := strings.Cut(rest, ".")
	n, err := strconv.Atoi(digits)
	if !ok || err != nil || n < 0 {
		return -1
	}
	return n
}

// llamaLess orders tensor names as llama.cpp's model loader does: by layer
// (non-layer tensors first), then by name. llama-quantize processes and
// writes tensors in this order, and its mix rules count tensors in it.
func llamaLess(a, b string) bool {
	la, lb := layerOf(a), layerOf(b)
	if la != lb {
		return la < lb
	}
	return a < b
}

// sortLlama sorts names in place into llama.cpp's loader order.
func sortLlama(names []string) {
	sort.SliceStable(names, func(i, j int) bool { return llamaLess(names[i], names[j]) })
}

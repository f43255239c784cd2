//go:build !purego

package simd

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestF16WideKernelsPresent guards against a table that silently loses the
// wide F16 tiles, which TestF16GemmOrder would pass through the gemmF16
// tiles (the same bits).
func TestF16WideKernelsPresent(t *testing.T) {
	for _, k := range asmKernels {
		if k.name != "avx512vnni" {
			continue
		}
		require.NotNil(t, k.widenF16)
		require.Len(t, k.f16Wide, wideToks)
		require.Len(t, k.f16WideIn, wideToks)
		return
	}
	t.Fatal("no avx512vnni kernel set")
}

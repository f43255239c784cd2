package passes

import "strings"

// fusedName joins member names sharing a dotted prefix:
// blk.0.q, blk.0.k, blk.0.v -> blk.0.q+k+v.
func fusedName(names ...string) string {
	prefix := names[0]
	for _, n := range names[1:] {
		for !strings.HasPrefix(n, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	prefix = prefix[:strings.LastIndex(prefix, ".")+1]
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = strings.TrimPrefix(n, prefix)
	}
	return prefix + strings.Join(parts, "+")
}

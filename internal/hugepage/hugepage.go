package hugepage

import "os"

// Size is a transparent huge page on amd64 and arm64.
const Size = 2 << 20

// enabled is false when WEFT_NO_HUGEPAGES=1 (for A/B measurements).
var enabled = os.Getenv("WEFT_NO_HUGEPAGES") != "1"

// Advise asks for huge pages behind b, a mapping.
func Advise(b []byte) {
	if enabled && len(b) > 0 {
		advise(b)
	}
}

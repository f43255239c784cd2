//go:build linux && (amd64 || arm64)

package vulkan

// SetWeightLimit makes weights larger than limit bytes lie in row chunks
// of at most limit bytes, as weights larger than the device's
// storage-buffer range do; it returns a function restoring the limit.
func SetWeightLimit(limit int64) (restore func()) {
	old := testWeightLimit
	testWeightLimit = limit
	return func() { testWeightLimit = old }
}

// RingBytes is what the staging ring holds.
const RingBytes = ringSlots * ringChunk

// FusedActivations returns, per node that writes its readers'
// activations itself, their kind.
func FusedActivations(e *Executable) map[int]string { return e.normQuant }

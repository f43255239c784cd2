//go:build linux && (amd64 || arm64)

package vulkan

import "time"

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

// DisableFusion makes Load record every RoPE, every Q8_K quantization
// and every projection of a MatMulQKV as a dispatch of its own, as before
// the RoPE·KV store, the Q8_K RMSNorm·w and the packed QKV weights; it
// returns a function restoring them.
func DisableFusion() (restore func()) {
	old := testNoFusion
	testNoFusion = true
	return func() { testNoFusion = old }
}

// DisableNormFold keeps a decode step's norms as dispatches of their own
// (foldNorms), whose numerics differ from the folded ones; it returns a
// function restoring the folding.
func DisableNormFold() (restore func()) {
	old := testNoNormFold
	testNoNormFold = true
	return func() { testNoNormFold = old }
}

// DisableTileTails keeps a prefill gate·up's FFN down activations a
// quantize dispatch of their own (gateUpTileTail); it returns a function
// restoring the fusion.
func DisableTileTails() (restore func()) {
	old := testNoTileTail
	testNoTileTail = true
	return func() { testNoTileTail = old }
}

// FoldedNorms returns how many norms a decode step folds into the
// matvecs around them.
func FoldedNorms(e *Executable) int { return len(e.normFold) }

// StepCounts returns the dispatches and barriers recorded for the step
// shape of tokens tokens and rows rows of the whole graph (0, 0 when it
// was not run yet).
func StepCounts(s *Session, tokens, rows int) (dispatches, barriers int) {
	p := s.steps[stepKey{-1, tokens, rows}]
	if p == nil {
		return 0, 0
	}
	return p.Dispatches(), p.Barriers()
}

// PackedQKV returns how many MatMulQKV nodes run as one dispatch over
// packed weights.
func PackedQKV(e *Executable) int { return len(e.packs) }

// SetSpinWait makes every Program of d poll its fence for spin before
// blocking (what WEFT_VULKAN_SPIN_US sets when the device opens); it
// returns a function restoring the previous time. No Program of d may be
// waiting meanwhile.
func SetSpinWait(d *Device, spin time.Duration) (restore func()) {
	old := d.spinWait
	d.spinWait = spin
	return func() { d.spinWait = old }
}

// MatMulShader is the shader family matmul node id takes at ntok tokens
// and whether it reads binary16 pairs.
func MatMulShader(e *Executable, id, ntok int) (string, bool) {
	return e.matmulShader(e.g.Nodes[id], ntok)
}

// StreamRead runs the bandwidth probe's kernel over buf with groups
// workgroups, runs times, and returns each run's device time and the sum
// of buf's words (modulo 2³²).
func StreamRead(d *Device, buf *Buffer, groups uint32, runs int) ([]time.Duration, uint32, error) {
	return d.streamRead(buf, groups, runs)
}

// FailStreamAllocs makes the next n buffer allocations of ReadBandwidth
// fail; it returns a function restoring them.
func FailStreamAllocs(n int) (restore func()) {
	old := testStreamAllocFailures
	testStreamAllocFailures = n
	return func() { testStreamAllocFailures = old }
}

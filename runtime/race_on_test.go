//go:build race

package runtime

// raceEnabled: the race detector makes sync.Pool drop items at random and
// instruments allocation, so allocation counts mean nothing under it.
const raceEnabled = true

//go:build !linux && !darwin

package sysmem

func available() (Memory, bool) { return Memory{}, false }

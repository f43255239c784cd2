//go:build !amd64 || purego

package simd

// cpuImpls has no assembly variants to offer on this build.
func cpuImpls() []*impl { return nil }

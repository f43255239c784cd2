//go:build !amd64 || purego

package simd

// cpuImpls has no assembly variants to offer on this build.
func cpuImpls() []*impl { return nil }

// gemmRows is the generated tiles' row count (table_amd64.go); the tests'
// models of the tiles' order name it on every build.
const gemmRows = 4

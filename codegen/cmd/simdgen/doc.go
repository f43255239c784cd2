// Command simdgen generates the amd64 assembly kernels of
// backends/cpu/simd with avo, and the Go table that lists them with
// jennifer. Its output depends only on this source, so regenerating is a
// no-op unless the generator changed.
//
// Usage (go generate in backends/cpu/simd runs it; see gen.go there):
//
//	cd codegen && go run ./cmd/simdgen -out ../backends/cpu/simd/kernels_amd64.s \
//	    -stubs ../backends/cpu/simd/kernels_amd64.go \
//	    -table ../backends/cpu/simd/table_amd64.go -pkg simd
package main

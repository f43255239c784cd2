package gguf

import (
	"runtime"
	"testing"
)

// allocatedBy returns the average bytes allocated by one Parse of b.
func allocatedBy(b []byte) uint64 {
	const runs = 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < runs; i++ {
		Parse(b)
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / runs
}

// TestParseAllocationBounded parses small files that declare huge counts.
// Allocation must stay within a small multiple of the input size: counts are
// checked against the bytes present before anything is sized by them.
func TestParseAllocationBounded(t *testing.T) {
	nested := new(raw).str("deep").u32(uint32(ValueArray))
	for i := 0; i < maxArrayDepth-1; i++ {
		nested.u32(uint32(ValueArray)).u64(1 << 40)
	}
	manyEmpty := new(raw).str("s").u32(uint32(ValueArray)).u32(uint32(ValueString)).u64(1 << 17)
	manyEmpty.add(make([]byte, 8<<17))
	cases := map[string][]byte{
		"tensor count 2^62":    parts{magic: Magic, version: 3, nTensors: ptr(1 << 62)}.build().b,
		"metadata count 2^63":  parts{magic: Magic, version: 3, nKV: ptr(1 << 63)}.build().b,
		"string length 2^62":   parts{magic: Magic, version: 3, kvs: [][]byte{new(raw).u64(1 << 62).b}}.build().b,
		"array length 2^60":    parts{magic: Magic, version: 3, kvs: [][]byte{new(raw).str("a").u32(uint32(ValueArray)).u32(uint32(ValueUint64)).u64(1 << 60).b}}.build().b,
		"nested arrays 2^40":   parts{magic: Magic, version: 3, kvs: [][]byte{nested.b}, dataBytes: 4096}.build().b,
		"131072 empty strings": parts{magic: Magic, version: 3, kvs: [][]byte{manyEmpty.b}}.build().b,
		"tensor dims 2^40": parts{magic: Magic, version: 3, infos: [][]byte{
			tensorInfo("t", []uint64{1 << 40, 1 << 20}, uint32(TypeF32), 0)}}.build().b,
	}
	for name, b := range cases {
		got := allocatedBy(b)
		if limit := 4*uint64(len(b)) + 16<<10; got > limit {
			t.Errorf("%s: %d-byte file allocated %d bytes per parse (limit %d)", name, len(b), got, limit)
		}
	}
}

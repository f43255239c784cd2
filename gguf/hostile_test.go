package gguf

import (
	"errors"
	"math"
	"strings"
	"testing"
)

type hostileCase struct {
	name  string
	parts func(p *parts)
	words []string             // all must appear in the message
	off   func(l layout) int64 // the byte offset the error must name
}

func at(x int64) func(layout) int64 { return func(layout) int64 { return x } }
func kvAt(i int) func(layout) int64 { return func(l layout) int64 { return l.kvAt[i] } }
func infoAt(i int, delta int64) func(layout) int64 {
	return func(l layout) int64 { return l.infoAt[i] + delta }
}

func deepArray(depth int) []byte {
	r := new(raw).str("deep").u32(uint32(ValueArray))
	for i := 0; i < depth; i++ {
		r.u32(uint32(ValueArray)).u64(1)
	}
	return r.u32(uint32(ValueUint8)).u64(0).b
}

var hostileCases = []hostileCase{
	{"wrong magic", func(p *parts) { p.magic = "GGML" }, []string{"bad magic"}, at(0)},
	{"version 1", func(p *parts) { p.version = 1 }, []string{"unsupported", "version 1"}, at(4)},
	{"version 4", func(p *parts) { p.version = 4 }, []string{"unsupported", "version 4"}, at(4)},
	{"version 0xFFFF", func(p *parts) { p.version = 0xFFFF }, []string{"unsupported", "65535"}, at(4)},
	{"absurd tensor count", func(p *parts) { p.nTensors = ptr(1 << 62) }, []string{"tensor count", "impossible"}, at(8)},
	{"absurd metadata count", func(p *parts) { p.nKV = ptr(math.MaxUint64) }, []string{"metadata count", "impossible"}, at(16)},
	{"key length beyond file", func(p *parts) {
		p.kvs[0] = new(raw).u64(1 << 40).b
	}, []string{"metadata key length", "exceeds"}, kvAt(0)},
	{"string value beyond file", func(p *parts) {
		p.kvs[0] = new(raw).str("k").u32(uint32(ValueString)).u64(1 << 33).b
	}, []string{"string value", "exceeds"}, func(l layout) int64 { return l.kvAt[0] + 13 }},
	{"array length beyond file", func(p *parts) {
		p.kvs[1] = new(raw).str("arr").u32(uint32(ValueArray)).u32(uint32(ValueFloat32)).u64(1 << 61).b
	}, []string{"array length", "exceeds"}, func(l layout) int64 { return l.kvAt[1] + 19 }},
	{"duplicate key", func(p *parts) {
		p.kvs[1] = kvStr("general.architecture", "x")
	}, []string{"duplicate metadata key", "general.architecture"}, kvAt(1)},
	{"unknown value type", func(p *parts) {
		p.kvs[1] = new(raw).str("odd").u32(13).u32(0).b
	}, []string{"unknown value type 13"}, func(l layout) int64 { return l.kvAt[1] + 11 }},
	{"unknown array element type", func(p *parts) {
		p.kvs[1] = new(raw).str("odd").u32(uint32(ValueArray)).u32(99).u64(0).b
	}, []string{"unknown array element type 99"}, func(l layout) int64 { return l.kvAt[1] + 15 }},
	{"arrays nested too deep", func(p *parts) { p.kvs[1] = deepArray(maxArrayDepth + 1) },
		[]string{"nested deeper"}, nil},
	{"alignment 0", func(p *parts) { p.kvs = append(p.kvs, kvU32("general.alignment", 0)) },
		[]string{"alignment 0", "power of two"}, func(l layout) int64 { return l.kvAt[2] + 25 }},
	{"alignment 3", func(p *parts) { p.kvs = append(p.kvs, kvU32("general.alignment", 3)) },
		[]string{"alignment 3", "power of two"}, func(l layout) int64 { return l.kvAt[2] + 25 }},
	{"alignment not uint32", func(p *parts) { p.kvs = append(p.kvs, kvStr("general.alignment", "32")) },
		[]string{"alignment", "want uint32"}, func(l layout) int64 { return l.kvAt[2] + 25 }},
	{"duplicate tensor name", func(p *parts) {
		p.infos[1] = tensorInfo("a", []uint64{32, 3}, uint32(TypeQ8_0), 64)
	}, []string{"duplicate tensor name", `"a"`}, infoAt(1, 0)},
	{"tensor name too long", func(p *parts) {
		p.infos[1] = tensorInfo(strings.Repeat("n", 64), []uint64{32, 3}, uint32(TypeQ8_0), 64)
	}, []string{"longer than 63"}, infoAt(1, 0)},
	{"unknown tensor type", func(p *parts) {
		p.infos[1] = tensorInfo("b", []uint64{32, 3}, 5, 64)
	}, []string{`"b"`, "unknown type id 5"}, infoAt(1, 9+4+16)},
	{"negative tensor type", func(p *parts) {
		p.infos[1] = tensorInfo("b", []uint64{32, 3}, math.MaxUint32, 64)
	}, []string{"unknown type id -1"}, infoAt(1, 9+4+16)},
	{"too many dims", func(p *parts) {
		p.infos[1] = tensorInfo("b", []uint64{32, 3, 1, 1, 1}, uint32(TypeQ8_0), 64)
	}, []string{`"b"`, "5 dimensions"}, infoAt(1, 9)},
	{"zero dims", func(p *parts) {
		p.infos[1] = tensorInfo("b", nil, uint32(TypeQ8_0), 64)
	}, []string{`"b"`, "0 dimensions"}, infoAt(1, 9)},
	{"overflowing dims", func(p *parts) {
		p.infos[1] = tensorInfo("b", []uint64{1 << 32, 1 << 31, 1 << 8, 2}, uint32(TypeF32), 64)
	}, []string{`"b"`, "overflows"}, infoAt(1, 0)},
	{"overflowing bytes", func(p *parts) {
		p.infos[1] = tensorInfo("b", []uint64{1 << 32, 1 << 29}, uint32(TypeF64), 64)
	}, []string{`"b"`, "overflows"}, infoAt(1, 0)},
	{"row not whole blocks", func(p *parts) {
		p.infos[1] = tensorInfo("b", []uint64{33, 3}, uint32(TypeQ8_0), 64)
	}, []string{`"b"`, "block size 32"}, infoAt(1, 0)},
	{"shape needs bytes past the end", func(p *parts) {
		p.infos[1] = tensorInfo("b", []uint64{32, 1 << 20}, uint32(TypeQ8_0), 64)
	}, []string{`"b"`, "needs 35651584 bytes", "only 166 data bytes"}, func(l layout) int64 { return l.dataAt + 64 }},
	{"offset past the end", func(p *parts) {
		p.infos[1] = tensorInfo("b", []uint64{32, 3}, uint32(TypeQ8_0), 1<<40)
	}, []string{`"b"`, "data offset 1099511627776"}, func(l layout) int64 { return int64(len(l.b)) }},
	{"truncated data", func(p *parts) { p.dataBytes -= 1 },
		[]string{`"b"`, "needs 102 bytes", "only 165"}, func(l layout) int64 { return l.dataAt + 64 }},
	{"overlapping tensors", func(p *parts) {
		p.infos[1] = tensorInfo("b", []uint64{32, 3}, uint32(TypeQ8_0), 32)
	}, []string{`"b"`, "overlaps", `"a"`}, func(l layout) int64 { return l.dataAt + 32 }},
	{"misaligned tensor", func(p *parts) {
		p.infos[1] = tensorInfo("b", []uint64{32, 3}, uint32(TypeQ8_0), 65)
	}, []string{`"b"`, "not a multiple of the alignment 32"}, infoAt(1, 9+4+16+4)},
}

func TestParseHostile(t *testing.T) {
	if _, err := Parse(validParts().build().b); err != nil {
		t.Fatalf("base file must be valid: %v", err)
	}
	for _, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) {
			p := validParts()
			c.parts(&p)
			l := p.build()
			fe := mustFormatError(t, l.b)
			for _, w := range c.words {
				if !strings.Contains(fe.Msg, w) {
					t.Errorf("message %q lacks %q", fe.Msg, w)
				}
			}
			if c.off != nil && fe.Offset != c.off(l) {
				t.Errorf("offset %d, want %d (%s)", fe.Offset, c.off(l), fe.Msg)
			}
			if !strings.Contains(fe.Error(), "at byte") {
				t.Errorf("Error() %q does not name the offset", fe.Error())
			}
		})
	}
}

func mustFormatError(t *testing.T, b []byte) *FormatError {
	t.Helper()
	f, err := Parse(b)
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("got (%v, %v), want a *FormatError", f != nil, err)
	}
	if fe.Offset < 0 || fe.Offset > int64(len(b)) {
		t.Errorf("offset %d outside the %d-byte file", fe.Offset, len(b))
	}
	return fe
}

// TestParseTruncatedEverywhere cuts a valid file at every byte of its header
// and its data section: each prefix must fail cleanly, never panic.
func TestParseTruncatedEverywhere(t *testing.T) {
	b := validParts().build().b
	for cut := 0; cut < len(b); cut++ {
		fe := mustFormatError(t, b[:cut:cut])
		if fe.Offset > int64(cut) {
			t.Fatalf("cut %d: offset %d past the end", cut, fe.Offset)
		}
		if !strings.Contains(fe.Msg, "truncated") && !strings.Contains(fe.Msg, "exceeds") &&
			!strings.Contains(fe.Msg, "impossible") && !strings.Contains(fe.Msg, "only") {
			t.Fatalf("cut %d: message %q does not say the file is short", cut, fe.Msg)
		}
	}
}

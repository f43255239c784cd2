package gguf

import (
	"encoding/binary"
	"math"
)

// raw builds GGUF bytes field by field, independently of the package's
// encoder, so tests can craft both valid and hostile files.
type raw struct{ b []byte }

func (r *raw) u32(x uint32) *raw { r.b = binary.LittleEndian.AppendUint32(r.b, x); return r }
func (r *raw) u64(x uint64) *raw { r.b = binary.LittleEndian.AppendUint64(r.b, x); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.b = append(r.b, s...); return r }
func (r *raw) add(p []byte) *raw { r.b = append(r.b, p...); return r }

func kvU32(key string, v uint32) []byte {
	return new(raw).str(key).u32(uint32(ValueUint32)).u32(v).b
}

func kvStr(key, v string) []byte {
	return new(raw).str(key).u32(uint32(ValueString)).str(v).b
}

func kvF32s(key string, v []float32) []byte {
	r := new(raw).str(key).u32(uint32(ValueArray)).u32(uint32(ValueFloat32)).u64(uint64(len(v)))
	for _, x := range v {
		r.u32(math.Float32bits(x))
	}
	return r.b
}

func tensorInfo(name string, dims []uint64, typ uint32, off uint64) []byte {
	r := new(raw).str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	return r.u32(typ).u64(off).b
}

// layout is a file assembled from parts, with the offsets where each began.
type layout struct {
	b      []byte
	kvAt   []int64
	infoAt []int64
	dataAt int64
}

// parts describe a GGUF file; zero fields take valid defaults.
type parts struct {
	magic     string
	version   uint32
	nTensors  *uint64
	nKV       *uint64
	kvs       [][]byte
	infos     [][]byte
	align     int64
	dataBytes int
}

func (p parts) build() layout {
	var l layout
	r := new(raw)
	r.b = append(r.b, p.magic...)
	r.u32(p.version)
	r.u64(orLen(p.nTensors, len(p.infos))).u64(orLen(p.nKV, len(p.kvs)))
	for _, kv := range p.kvs {
		l.kvAt = append(l.kvAt, int64(len(r.b)))
		r.add(kv)
	}
	for _, ti := range p.infos {
		l.infoAt = append(l.infoAt, int64(len(r.b)))
		r.add(ti)
	}
	a := p.align
	if a == 0 {
		a = DefaultAlignment
	}
	for int64(len(r.b))%a != 0 {
		r.b = append(r.b, 0)
	}
	l.dataAt = int64(len(r.b))
	for i := 0; i < p.dataBytes; i++ {
		r.b = append(r.b, byte(i*7+3))
	}
	l.b = r.b
	return l
}

func orLen(p *uint64, n int) uint64 {
	if p != nil {
		return *p
	}
	return uint64(n)
}

func ptr(x uint64) *uint64 { return &x }

// validParts is a small valid file: two metadata keys, an F32 and a Q8_0
// tensor laid out back to back.
func validParts() parts {
	return parts{
		magic:   Magic,
		version: 3,
		kvs: [][]byte{
			kvStr("general.architecture", "llama"),
			kvF32s("test.scores", []float32{0.5, -1.25, 3}),
		},
		infos: [][]byte{
			tensorInfo("a", []uint64{8, 2}, uint32(TypeF32), 0),
			tensorInfo("b", []uint64{32, 3}, uint32(TypeQ8_0), 64),
		},
		dataBytes: 64 + 3*34,
	}
}

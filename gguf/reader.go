package gguf

import (
	"encoding/binary"
	"math"
	"sort"
)

// Magic is the four bytes every GGUF file starts with.
const Magic = "GGUF"

// DefaultAlignment is the data alignment used when general.alignment is absent.
const DefaultAlignment = 32

// maxArrayDepth bounds nesting of array values so hostile input cannot
// exhaust the stack.
const maxArrayDepth = 8

// maxDims is the most dimensions a tensor may have (ggml's limit).
const maxDims = 4

// decoder reads little-endian values from a byte slice, tracking its offset.
type decoder struct {
	b   []byte
	off int64
}

func (d *decoder) remaining() int64 { return int64(len(d.b)) - d.off }

func (d *decoder) need(n int64, what string) error {
	if n < 0 || n > d.remaining() {
		return formatErr(d.off, "truncated: %s needs %d bytes, %d remain", what, n, d.remaining())
	}
	return nil
}

func (d *decoder) bytes(n int64, what string) ([]byte, error) {
	if err := d.need(n, what); err != nil {
		return nil, err
	}
	s := d.b[d.off : d.off+n]
	d.off += n
	return s, nil
}

func (d *decoder) u8(what string) (uint8, error) {
	s, err := d.bytes(1, what)
	if err != nil {
		return 0, err
	}
	return s[0], nil
}

func (d *decoder) u16(what string) (uint16, error) {
	s, err := d.bytes(2, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(s), nil
}

func (d *decoder) u32(what string) (uint32, error) {
	s, err := d.bytes(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(s), nil
}

func (d *decoder) u64(what string) (uint64, error) {
	s, err := d.bytes(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(s), nil
}

// str reads a length-prefixed string; the length is checked against the
// remaining bytes before anything is allocated. The error names label (of
// key, when given); the message is built only on failure because str runs
// once per element of large string arrays.
func (d *decoder) str(label, key string) (string, error) {
	start := d.off
	if d.remaining() < 8 {
		return "", d.need(8, describe(label, key)+" length")
	}
	n, _ := d.u64("")
	if n > uint64(d.remaining()) {
		return "", formatErr(start, "%s length %d exceeds the %d bytes left in the file", describe(label, key), n, d.remaining())
	}
	s, _ := d.bytes(int64(n), "")
	return string(s), nil
}

func describe(label, key string) string {
	if key == "" {
		return label
	}
	return label + " of " + key
}

// Parse reads the header of a GGUF file held in b. The returned File keeps b
// for TensorData; tensor bytes are not copied.
func Parse(b []byte) (*File, error) {
	d := &decoder{b: b}
	f := &File{data: b, Alignment: DefaultAlignment}
	magic, err := d.bytes(4, "magic")
	if err != nil {
		return nil, err
	}
	if string(magic) != Magic {
		return nil, formatErr(0, "bad magic %q: not a GGUF file", magic)
	}
	if f.Version, err = d.u32("version"); err != nil {
		return nil, err
	}
	if f.Version != 2 && f.Version != 3 {
		return nil, formatErr(4, "unsupported GGUF version %d (supported: 2, 3)", f.Version)
	}
	nTensors, err := d.u64("tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := d.u64("metadata count")
	if err != nil {
		return nil, err
	}
	// A key-value pair needs at least 8 (key length) + 4 (type) + 1 bytes; a
	// tensor info at least 8 + 4 + 4 + 8. Reject counts the file cannot hold.
	if nKV > uint64(d.remaining())/13 {
		return nil, formatErr(16, "metadata count %d is impossible for a %d-byte file", nKV, len(b))
	}
	if err := f.readMetadata(d, int(nKV)); err != nil {
		return nil, err
	}
	if nTensors > uint64(d.remaining())/24 {
		return nil, formatErr(8, "tensor count %d is impossible for a %d-byte file", nTensors, len(b))
	}
	if err := f.readAlignment(); err != nil {
		return nil, err
	}
	if err := f.readTensorInfos(d, int(nTensors)); err != nil {
		return nil, err
	}
	f.DataOffset = alignUp(d.off, int64(f.Alignment))
	if err := f.checkTensorExtents(); err != nil {
		return nil, err
	}
	return f, nil
}

func alignUp(x, a int64) int64 { return (x + a - 1) / a * a }

func (f *File) readMetadata(d *decoder, n int) error {
	f.KV = make([]KV, 0, n)
	f.kvIndex = make(map[string]int, n)
	for i := 0; i < n; i++ {
		at := d.off
		key, err := d.str("metadata key", "")
		if err != nil {
			return err
		}
		if _, dup := f.kvIndex[key]; dup {
			return formatErr(at, "duplicate metadata key %q", key)
		}
		tagAt := d.off
		tag, err := d.u32("value type of " + key)
		if err != nil {
			return err
		}
		v, err := d.value(ValueType(tag), key, tagAt, 0)
		if err != nil {
			return err
		}
		if key == "general.alignment" {
			f.alignAt = tagAt
		}
		f.kvIndex[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}
	return nil
}

func (d *decoder) value(t ValueType, key string, tagAt int64, depth int) (Value, error) {
	if !t.valid() {
		return Value{}, formatErr(tagAt, "unknown value type %d for key %q", uint32(t), key)
	}
	if t == ValueArray {
		a, err := d.array(key, depth)
		return Value{Type: t, V: a}, err
	}
	if t == ValueString {
		s, err := d.str("string value", key)
		return Value{Type: t, V: s}, err
	}
	raw, err := d.bytes(int64(scalarSize[t]), "value of "+key)
	if err != nil {
		return Value{}, err
	}
	return Value{Type: t, V: decodeScalar(t, raw)}, nil
}

func decodeScalar(t ValueType, raw []byte) any {
	le := binary.LittleEndian
	switch t {
	case ValueUint8:
		return raw[0]
	case ValueInt8:
		return int8(raw[0])
	case ValueUint16:
		return le.Uint16(raw)
	case ValueInt16:
		return int16(le.Uint16(raw))
	case ValueUint32:
		return le.Uint32(raw)
	case ValueInt32:
		return int32(le.Uint32(raw))
	case ValueFloat32:
		return math.Float32frombits(le.Uint32(raw))
	case ValueBool:
		return raw[0] != 0
	case ValueUint64:
		return le.Uint64(raw)
	case ValueInt64:
		return int64(le.Uint64(raw))
	case ValueFloat64:
		return math.Float64frombits(le.Uint64(raw))
	}
	return nil
}

func (d *decoder) array(key string, depth int) (Array, error) {
	at := d.off
	if depth >= maxArrayDepth {
		return Array{}, formatErr(at, "arrays nested deeper than %d in key %q", maxArrayDepth, key)
	}
	et, err := d.u32("array element type of " + key)
	if err != nil {
		return Array{}, err
	}
	elem := ValueType(et)
	if !elem.valid() {
		return Array{}, formatErr(at, "unknown array element type %d for key %q", et, key)
	}
	n, err := d.u64("array length of " + key)
	if err != nil {
		return Array{}, err
	}
	minSize := uint64(scalarSize[elem])
	switch elem {
	case ValueString:
		minSize = 8
	case ValueArray:
		minSize = 12
	}
	if n > uint64(d.remaining())/minSize {
		return Array{}, formatErr(at+4, "array length %d of key %q exceeds the %d bytes left in the file", n, key, d.remaining())
	}
	return d.arrayData(elem, int(n), key, depth)
}

func (d *decoder) arrayData(elem ValueType, n int, key string, depth int) (Array, error) {
	a := Array{Elem: elem}
	switch elem {
	case ValueString:
		s := make([]string, n)
		for i := range s {
			var err error
			if s[i], err = d.str("string element", key); err != nil {
				return a, err
			}
		}
		a.Data = s
	case ValueArray:
		// Grow as elements parse: preallocating n at every nesting level
		// would let one small file claim many times its size.
		s := make([]Array, 0, min(n, 64))
		for range n {
			sub, err := d.array(key, depth+1)
			if err != nil {
				return a, err
			}
			s = append(s, sub)
		}
		a.Data = s
	default:
		raw, err := d.bytes(int64(n)*int64(scalarSize[elem]), "array data of "+key)
		if err != nil {
			return a, err
		}
		a.Data = decodeScalarSlice(elem, raw, n)
	}
	return a, nil
}

func decodeScalarSlice(t ValueType, raw []byte, n int) any {
	sz := scalarSize[t]
	switch t {
	case ValueUint8:
		return append(make([]uint8, 0, n), raw...)
	case ValueInt8:
		return fill[int8](raw, n, sz, t)
	case ValueUint16:
		return fill[uint16](raw, n, sz, t)
	case ValueInt16:
		return fill[int16](raw, n, sz, t)
	case ValueUint32:
		return fill[uint32](raw, n, sz, t)
	case ValueInt32:
		return fill[int32](raw, n, sz, t)
	case ValueFloat32:
		return fill[float32](raw, n, sz, t)
	case ValueBool:
		return fill[bool](raw, n, sz, t)
	case ValueUint64:
		return fill[uint64](raw, n, sz, t)
	case ValueInt64:
		return fill[int64](raw, n, sz, t)
	case ValueFloat64:
		return fill[float64](raw, n, sz, t)
	}
	return nil
}

func fill[T any](raw []byte, n, sz int, t ValueType) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = decodeScalar(t, raw[i*sz:(i+1)*sz]).(T)
	}
	return out
}

func (f *File) readAlignment() error {
	v, ok := f.Lookup("general.alignment")
	if !ok {
		return nil
	}
	a, isU32 := v.V.(uint32)
	if !isU32 {
		return formatErr(f.alignAt, "general.alignment has type %s, want uint32", v.Type)
	}
	if a == 0 || a&(a-1) != 0 {
		return formatErr(f.alignAt, "general.alignment %d is not a positive power of two", a)
	}
	f.Alignment = a
	return nil
}

func (f *File) readTensorInfos(d *decoder, n int) error {
	f.Tensors = make([]TensorInfo, 0, n)
	f.tensorIndex = make(map[string]int, n)
	for i := 0; i < n; i++ {
		t, err := f.readTensorInfo(d)
		if err != nil {
			return err
		}
		f.tensorIndex[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	return nil
}

func (f *File) readTensorInfo(d *decoder) (TensorInfo, error) {
	var t TensorInfo
	at := d.off
	name, err := d.str("tensor name", "")
	if err != nil {
		return t, err
	}
	if len(name) > maxNameLen {
		return t, formatErr(at, "tensor name of %d bytes is longer than %d: %.20q…", len(name), maxNameLen, name)
	}
	if _, dup := f.tensorIndex[name]; dup {
		return t, formatErr(at, "duplicate tensor name %q", name)
	}
	t.Name = name
	nd, err := d.u32("dimension count of " + name)
	if err != nil {
		return t, err
	}
	if nd == 0 || nd > maxDims {
		return t, formatErr(d.off-4, "tensor %q has %d dimensions (1 to %d allowed)", name, nd, maxDims)
	}
	t.Dims = make([]uint64, nd)
	for j := range t.Dims {
		if t.Dims[j], err = d.u64("dimension of " + name); err != nil {
			return t, err
		}
	}
	typeAt := d.off
	tt, err := d.u32("type of " + name)
	if err != nil {
		return t, err
	}
	t.Type = TensorType(tt)
	if !t.Type.Known() {
		return t, formatErr(typeAt, "tensor %q has unknown type id %d", name, int32(tt))
	}
	if t.Size, err = TensorBytes(t.Type, t.Dims); err != nil {
		return t, formatErr(at, "tensor %q: %v", name, err)
	}
	offAt := d.off
	if t.Offset, err = d.u64("data offset of " + name); err != nil {
		return t, err
	}
	if t.Offset%uint64(f.Alignment) != 0 {
		return t, formatErr(offAt, "tensor %q offset %d is not a multiple of the alignment %d", name, t.Offset, f.Alignment)
	}
	return t, nil
}

// checkTensorExtents verifies every tensor lies inside the data section and
// that no two overlap.
func (f *File) checkTensorExtents() error {
	if len(f.Tensors) == 0 {
		return nil
	}
	if f.DataOffset > int64(len(f.data)) {
		return formatErr(int64(len(f.data)), "truncated: data section starts at %d past the end of the file", f.DataOffset)
	}
	avail := uint64(int64(len(f.data)) - f.DataOffset)
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset })
	var prevEnd uint64
	prev := ""
	for _, i := range order {
		t := f.Tensors[i]
		if t.Offset > avail || t.Size > avail-t.Offset {
			return formatErr(f.DataOffset+int64(min(t.Offset, avail)), "tensor %q (%s, dims %v) needs %d bytes at data offset %d but the file has only %d data bytes", t.Name, t.Type, t.Dims, t.Size, t.Offset, avail)
		}
		if t.Offset < prevEnd {
			return formatErr(f.DataOffset+int64(t.Offset), "tensor %q at data offset %d overlaps tensor %q ending at %d", t.Name, t.Offset, prev, prevEnd)
		}
		prevEnd, prev = t.Offset+t.Size, t.Name
	}
	return nil
}

package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// ValueOf wraps a Go value in a Value, inferring its GGUF type from the Go
// type (uint8 … float64, bool, string, Array). Any other Go type yields a
// Value that Write rejects with an error naming the key.
func ValueOf(v any) Value {
	switch v.(type) {
	case uint8:
		return Value{ValueUint8, v}
	case int8:
		return Value{ValueInt8, v}
	case uint16:
		return Value{ValueUint16, v}
	case int16:
		return Value{ValueInt16, v}
	case uint32:
		return Value{ValueUint32, v}
	case int32:
		return Value{ValueInt32, v}
	case float32:
		return Value{ValueFloat32, v}
	case bool:
		return Value{ValueBool, v}
	case string:
		return Value{ValueString, v}
	case Array:
		return Value{ValueArray, v}
	case uint64:
		return Value{ValueUint64, v}
	case int64:
		return Value{ValueInt64, v}
	case float64:
		return Value{ValueFloat64, v}
	}
	return Value{Type: ValueType(math.MaxUint32), V: v}
}

// ArrayOf wraps a typed slice ([]uint8 … []float64, []bool, []string or
// []Array) in an Array value.
func ArrayOf(data any) Value {
	a := Array{Data: data}
	switch data.(type) {
	case []uint8:
		a.Elem = ValueUint8
	case []int8:
		a.Elem = ValueInt8
	case []uint16:
		a.Elem = ValueUint16
	case []int16:
		a.Elem = ValueInt16
	case []uint32:
		a.Elem = ValueUint32
	case []int32:
		a.Elem = ValueInt32
	case []float32:
		a.Elem = ValueFloat32
	case []bool:
		a.Elem = ValueBool
	case []string:
		a.Elem = ValueString
	case []Array:
		a.Elem = ValueArray
	case []uint64:
		a.Elem = ValueUint64
	case []int64:
		a.Elem = ValueInt64
	case []float64:
		a.Elem = ValueFloat64
	default:
		a.Elem = ValueType(math.MaxUint32)
	}
	return Value{Type: ValueArray, V: a}
}

// encoder appends little-endian GGUF encodings to a byte slice.
type encoder struct{ b []byte }

func (e *encoder) u32(x uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, x) }
func (e *encoder) u64(x uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, x) }

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.b = append(e.b, s...)
}

// value appends v's payload (without its type tag), checking that the Go
// value matches the declared type.
func (e *encoder) value(v Value, depth int) error {
	if v.Type == ValueArray {
		a, ok := v.V.(Array)
		if !ok {
			return fmt.Errorf("type array holds Go type %T", v.V)
		}
		return e.array(a, depth)
	}
	if !v.Type.valid() {
		return fmt.Errorf("unsupported value type %d (Go type %T)", uint32(v.Type), v.V)
	}
	if v.Type == ValueString {
		s, ok := v.V.(string)
		if !ok {
			return fmt.Errorf("type string holds Go type %T", v.V)
		}
		e.str(s)
		return nil
	}
	return e.scalar(v.Type, v.V)
}

func (e *encoder) scalar(t ValueType, x any) error {
	le := binary.LittleEndian
	ok := true
	switch t {
	case ValueUint8:
		var v uint8
		v, ok = x.(uint8)
		e.b = append(e.b, v)
	case ValueInt8:
		var v int8
		v, ok = x.(int8)
		e.b = append(e.b, byte(v))
	case ValueUint16:
		var v uint16
		v, ok = x.(uint16)
		e.b = le.AppendUint16(e.b, v)
	case ValueInt16:
		var v int16
		v, ok = x.(int16)
		e.b = le.AppendUint16(e.b, uint16(v))
	case ValueUint32:
		var v uint32
		v, ok = x.(uint32)
		e.u32(v)
	case ValueInt32:
		var v int32
		v, ok = x.(int32)
		e.u32(uint32(v))
	case ValueFloat32:
		var v float32
		v, ok = x.(float32)
		e.u32(math.Float32bits(v))
	case ValueBool:
		var v bool
		v, ok = x.(bool)
		e.b = append(e.b, boolByte(v))
	case ValueUint64:
		var v uint64
		v, ok = x.(uint64)
		e.u64(v)
	case ValueInt64:
		var v int64
		v, ok = x.(int64)
		e.u64(uint64(v))
	case ValueFloat64:
		var v float64
		v, ok = x.(float64)
		e.u64(math.Float64bits(v))
	}
	if !ok {
		return fmt.Errorf("type %s holds Go type %T", t, x)
	}
	return nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func (e *encoder) array(a Array, depth int) error {
	if depth >= maxArrayDepth {
		return fmt.Errorf("arrays nested deeper than %d", maxArrayDepth)
	}
	if !a.Elem.valid() {
		return fmt.Errorf("unsupported array element type %d (Go type %T)", uint32(a.Elem), a.Data)
	}
	e.u32(uint32(a.Elem))
	e.u64(uint64(a.Len()))
	switch d := a.Data.(type) {
	case []string:
		if a.Elem != ValueString {
			break
		}
		for _, s := range d {
			e.str(s)
		}
		return nil
	case []Array:
		if a.Elem != ValueArray {
			break
		}
		for _, sub := range d {
			if err := e.array(sub, depth+1); err != nil {
				return err
			}
		}
		return nil
	default:
		return e.scalars(a)
	}
	return fmt.Errorf("array of %s holds Go type %T", a.Elem, a.Data)
}

// scalars appends the elements of a fixed-width array.
func (e *encoder) scalars(a Array) error {
	n := a.Len()
	if n == 0 && a.Data == nil {
		return nil
	}
	each := sliceEach(a.Data)
	if each == nil || a.Elem == ValueString || a.Elem == ValueArray {
		return fmt.Errorf("array of %s holds Go type %T", a.Elem, a.Data)
	}
	for i := 0; i < n; i++ {
		if err := e.scalar(a.Elem, each(i)); err != nil {
			return fmt.Errorf("array of %s holds Go type %T", a.Elem, a.Data)
		}
	}
	return nil
}

// sliceEach returns an indexer over a fixed-width typed slice, or nil.
func sliceEach(data any) func(int) any {
	switch d := data.(type) {
	case []uint8:
		return func(i int) any { return d[i] }
	case []int8:
		return func(i int) any { return d[i] }
	case []uint16:
		return func(i int) any { return d[i] }
	case []int16:
		return func(i int) any { return d[i] }
	case []uint32:
		return func(i int) any { return d[i] }
	case []int32:
		return func(i int) any { return d[i] }
	case []float32:
		return func(i int) any { return d[i] }
	case []bool:
		return func(i int) any { return d[i] }
	case []uint64:
		return func(i int) any { return d[i] }
	case []int64:
		return func(i int) any { return d[i] }
	case []float64:
		return func(i int) any { return d[i] }
	}
	return nil
}

package gguf

import "fmt"

// ValueType is the type tag of a GGUF metadata value.
type ValueType uint32

// Metadata value types, numbered as in the GGUF specification.
const (
	ValueUint8   ValueType = 0
	ValueInt8    ValueType = 1
	ValueUint16  ValueType = 2
	ValueInt16   ValueType = 3
	ValueUint32  ValueType = 4
	ValueInt32   ValueType = 5
	ValueFloat32 ValueType = 6
	ValueBool    ValueType = 7
	ValueString  ValueType = 8
	ValueArray   ValueType = 9
	ValueUint64  ValueType = 10
	ValueInt64   ValueType = 11
	ValueFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

// scalarSize is the encoded size of a fixed-width value type (0 for string and array).
var scalarSize = [...]int{1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("valuetype(%d)", uint32(t))
}

func (t ValueType) valid() bool { return int(t) < len(valueTypeNames) }

// Value is one metadata value. V holds the natural Go type of Type:
// uint8, int8, uint16, int16, uint32, int32, float32, bool, string, uint64,
// int64, float64, or Array.
type Value struct {
	Type ValueType
	V    any
}

// Array is an array value. Data is a typed slice matching Elem: []uint8,
// []int8, []uint16, []int16, []uint32, []int32, []float32, []bool, []string,
// []uint64, []int64, []float64, or []Array for nested arrays.
type Array struct {
	Elem ValueType
	Data any
}

// Len returns the number of elements.
func (a Array) Len() int {
	switch d := a.Data.(type) {
	case []uint8:
		return len(d)
	case []int8:
		return len(d)
	case []uint16:
		return len(d)
	case []int16:
		return len(d)
	case []uint32:
		return len(d)
	case []int32:
		return len(d)
	case []float32:
		return len(d)
	case []bool:
		return len(d)
	case []string:
		return len(d)
	case []uint64:
		return len(d)
	case []int64:
		return len(d)
	case []float64:
		return len(d)
	case []Array:
		return len(d)
	}
	return 0
}

// Uint64 converts any integer value that is non-negative to uint64.
func (v Value) Uint64() (uint64, bool) {
	switch x := v.V.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	case bool:
		return 0, false
	}
	if i, ok := v.Int64(); ok && i >= 0 {
		return uint64(i), true
	}
	return 0, false
}

// Int64 converts any integer value that fits to int64.
func (v Value) Int64() (int64, bool) {
	switch x := v.V.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x <= 1<<63-1 {
			return int64(x), true
		}
	}
	return 0, false
}

// Float64 converts a float or integer value to float64.
func (v Value) Float64() (float64, bool) {
	switch x := v.V.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	if i, ok := v.Int64(); ok {
		return float64(i), true
	}
	if u, ok := v.Uint64(); ok {
		return float64(u), true
	}
	return 0, false
}

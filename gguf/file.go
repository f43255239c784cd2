package gguf

import (
	"fmt"
	"sync"

	"github.com/weft-ml/weft/internal/safefile"
)

// KV is one metadata key-value pair, in file order.
type KV struct {
	Key   string
	Value Value
}

// TensorInfo describes one tensor: its shape (innermost dimension first, as
// GGUF stores it), element type, and where its bytes lie.
type TensorInfo struct {
	Name   string
	Dims   []uint64
	Type   TensorType
	Offset uint64 // from the start of the data section
	Size   uint64 // bytes
}

// NumElements returns the product of the dimensions (checked at parse time).
func (t *TensorInfo) NumElements() uint64 {
	n, _ := NumElements(t.Dims)
	return n
}

// File is a parsed GGUF file. Its metadata and tensor table are plain Go
// values; tensor bytes are read through TensorData from the mapping.
type File struct {
	Version    uint32
	Alignment  uint32
	KV         []KV
	Tensors    []TensorInfo
	DataOffset int64 // file offset of the data section

	path        string // as given to Open; empty for Parse
	data        []byte
	unmap       func() error
	alignAt     int64 // offset of general.alignment's type tag, for errors
	kvIndex     map[string]int
	tensorIndex map[string]int
	viewMu      sync.Mutex             // guards views
	views       map[string]*TensorInfo // resolved ViewNames (view.go)
}

// Open memory-maps path and parses its header. Close releases the mapping;
// slices from TensorData must not be used after Close.
func Open(path string) (*File, error) {
	fh, err := safefile.OpenRegular(path, "model file")
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	data, unmap, err := mapFile(fh, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f, err := Parse(data)
	if err != nil {
		unmap()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.unmap, f.path = unmap, path
	return f, nil
}

// Close releases the file mapping, if any.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.unmap, f.data = nil, nil
	return err
}

// Path is the path the file was opened from (empty for Parse).
func (f *File) Path() string { return f.path }

// Size returns the size of the underlying file in bytes.
func (f *File) Size() int64 { return int64(len(f.data)) }

// Lookup returns the value stored under key.
func (f *File) Lookup(key string) (Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// Tensor returns the tensor called name, or the view of one that name
// describes (see ViewName).
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return f.view(name)
	}
	return &f.Tensors[i], true
}

// TensorData returns the bytes of t without copying them. The extent was
// checked against the file when it was parsed.
func (f *File) TensorData(t *TensorInfo) []byte {
	start := f.DataOffset + int64(t.Offset)
	return f.data[start : start+int64(t.Size) : start+int64(t.Size)]
}

// Architecture returns general.architecture, or "" if absent.
func (f *File) Architecture() string { return f.String("general.architecture", "") }

// String returns the string under key, or def if absent or not a string.
func (f *File) String(key, def string) string {
	if v, ok := f.Lookup(key); ok {
		if s, ok := v.V.(string); ok {
			return s
		}
	}
	return def
}

// Uint32 returns the integer under key if it fits a uint32, else def.
func (f *File) Uint32(key string, def uint32) uint32 {
	if v, ok := f.Lookup(key); ok {
		if u, ok := v.Uint64(); ok && u <= 1<<32-1 {
			return uint32(u)
		}
	}
	return def
}

// Uint64 returns the integer under key if it is non-negative, else def.
func (f *File) Uint64(key string, def uint64) uint64 {
	if v, ok := f.Lookup(key); ok {
		if u, ok := v.Uint64(); ok {
			return u
		}
	}
	return def
}

// Int64 returns the integer under key, else def.
func (f *File) Int64(key string, def int64) int64 {
	if v, ok := f.Lookup(key); ok {
		if i, ok := v.Int64(); ok {
			return i
		}
	}
	return def
}

// Float32 returns the number under key as float32, else def.
func (f *File) Float32(key string, def float32) float32 {
	if v, ok := f.Lookup(key); ok {
		if x, ok := v.Float64(); ok {
			return float32(x)
		}
	}
	return def
}

// Bool returns the bool under key, else def.
func (f *File) Bool(key string, def bool) bool {
	if v, ok := f.Lookup(key); ok {
		if b, ok := v.V.(bool); ok {
			return b
		}
	}
	return def
}

// Array returns the array under key.
func (f *File) Array(key string) (Array, bool) {
	if v, ok := f.Lookup(key); ok {
		if a, ok := v.V.(Array); ok {
			return a, true
		}
	}
	return Array{}, false
}

// Strings returns the string array under key, or nil.
func (f *File) Strings(key string) []string {
	a, _ := f.Array(key)
	s, _ := a.Data.([]string)
	return s
}

// Float32s returns the float32 array under key, or nil.
func (f *File) Float32s(key string) []float32 {
	a, _ := f.Array(key)
	s, _ := a.Data.([]float32)
	return s
}

// Int32s returns the int32 array under key, or nil.
func (f *File) Int32s(key string) []int32 {
	a, _ := f.Array(key)
	s, _ := a.Data.([]int32)
	return s
}

package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// randomValue returns a random value of a random type; arrays nest up to depth.
func randomValue(r *rand.Rand, depth int) Value {
	t := ValueType(r.IntN(13))
	if t == ValueArray && depth >= 3 {
		t = ValueString
	}
	switch t {
	case ValueArray:
		return Value{ValueArray, randomArray(r, depth+1)}
	case ValueString:
		return Value{t, randomString(r)}
	}
	return Value{t, randomScalar(r, t)}
}

func randomString(r *rand.Rand) string {
	b := make([]byte, r.IntN(20))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return string(b)
}

func randomScalar(r *rand.Rand, t ValueType) any {
	u := r.Uint64()
	switch t {
	case ValueUint8:
		return uint8(u)
	case ValueInt8:
		return int8(u)
	case ValueUint16:
		return uint16(u)
	case ValueInt16:
		return int16(u)
	case ValueUint32:
		return uint32(u)
	case ValueInt32:
		return int32(u)
	case ValueFloat32:
		return float32(r.NormFloat64())
	case ValueBool:
		return u&1 == 1
	case ValueUint64:
		return u
	case ValueInt64:
		return int64(u)
	}
	return r.NormFloat64()
}

func randomArray(r *rand.Rand, depth int) Array {
	n := r.IntN(6)
	elem := ValueType(r.IntN(13))
	if elem == ValueArray && depth >= 3 {
		elem = ValueUint8
	}
	switch elem {
	case ValueString:
		s := make([]string, n)
		for i := range s {
			s[i] = randomString(r)
		}
		return ArrayOf(s).V.(Array)
	case ValueArray:
		s := make([]Array, n)
		for i := range s {
			s[i] = randomArray(r, depth+1)
		}
		return Array{ValueArray, s}
	}
	return randomScalarArray(r, elem, n)
}

// randomScalarArray builds a typed slice through reflection so that the
// element values come from the same generator as scalar values.
func randomScalarArray(r *rand.Rand, elem ValueType, n int) Array {
	proto := reflect.TypeOf(randomScalar(r, elem))
	s := reflect.MakeSlice(reflect.SliceOf(proto), n, n)
	for i := 0; i < n; i++ {
		s.Index(i).Set(reflect.ValueOf(randomScalar(r, elem)))
	}
	return Array{elem, s.Interface()}
}

var writableTypes = []TensorType{TypeF32, TypeF16, TypeBF16, TypeQ4_0, TypeQ4_1, TypeQ5_0, TypeQ5_1, TypeQ8_0, TypeQ2_K, TypeQ3_K, TypeQ4_K, TypeQ5_K, TypeQ6_K, TypeI8, TypeI32}

func randomTensors(r *rand.Rand, n int) []TensorSpec {
	ts := make([]TensorSpec, n)
	for i := range ts {
		typ := writableTypes[r.IntN(len(writableTypes))]
		dims := []uint64{typ.BlockSize() * uint64(1+r.IntN(3))}
		for j := r.IntN(3); j > 0; j-- {
			dims = append(dims, uint64(1+r.IntN(3)))
		}
		size, _ := TensorBytes(typ, dims)
		data := make([]byte, size)
		for k := range data {
			data[k] = byte(r.Uint32())
		}
		ts[i] = TensorSpec{Name: fmt.Sprintf("blk.%d.w%d", i, r.IntN(100)), Dims: dims, Type: typ, Data: data}
		if r.IntN(2) == 0 { // the same bytes, streamed in uneven pieces
			ts[i].Data, ts[i].Stream = nil, streamPieces(data, r.IntN(7)+1)
		}
	}
	return ts
}

func streamPieces(data []byte, piece int) func(io.Writer) error {
	return func(w io.Writer) error {
		for off := 0; off < len(data); off += piece {
			if _, err := w.Write(data[off:min(off+piece, len(data))]); err != nil {
				return err
			}
		}
		return nil
	}
}

func specBytes(t *testing.T, s *TensorSpec) []byte {
	if s.Data != nil {
		return s.Data
	}
	var b bytes.Buffer
	if err := s.Stream(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestWriteRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), 7))
	for iter := 0; iter < 200; iter++ {
		kv := make([]KV, r.IntN(12))
		for i := range kv {
			kv[i] = KV{fmt.Sprintf("k%d.%s", i, randomString(r)), randomValue(r, 0)}
		}
		if r.IntN(3) == 0 {
			kv = append(kv, KV{"general.alignment", ValueOf(uint32(1) << r.IntN(8))})
		}
		ts := randomTensors(r, r.IntN(5))
		var buf bytes.Buffer
		if err := Write(&buf, kv, ts); err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		checkRoundTrip(t, buf.Bytes(), kv, ts)
	}
}

func checkRoundTrip(t *testing.T, b []byte, kv []KV, ts []TensorSpec) {
	t.Helper()
	f, err := Parse(b)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if len(f.KV) != len(kv) || (len(kv) > 0 && !reflect.DeepEqual(f.KV, kv)) {
		t.Fatalf("metadata differs:\n got %#v\nwant %#v", f.KV, kv)
	}
	if f.DataOffset%int64(f.Alignment) != 0 {
		t.Fatalf("data section at %d not aligned to %d", f.DataOffset, f.Alignment)
	}
	end := uint64(0)
	for i := range ts {
		got := f.Tensors[i]
		if got.Name != ts[i].Name || got.Type != ts[i].Type || !reflect.DeepEqual(got.Dims, ts[i].Dims) {
			t.Fatalf("tensor %d: got %+v, want %s %s %v", i, got, ts[i].Name, ts[i].Type, ts[i].Dims)
		}
		if got.Offset != end {
			t.Fatalf("tensor %s at %d, want %d (back to back, padded)", got.Name, got.Offset, end)
		}
		if !bytes.Equal(f.TensorData(&got), specBytes(t, &ts[i])) {
			t.Fatalf("tensor %s: data differs", got.Name)
		}
		end += got.Size + padding(got.Size, uint64(f.Alignment))
	}
	if want := f.DataOffset + int64(end); len(ts) > 0 && int64(len(b)) != want {
		t.Fatalf("file is %d bytes, want %d", len(b), want)
	}
}

// TestWriteMatchesHandBuilt checks the exact bytes against the independent
// field-by-field builder.
func TestWriteMatchesHandBuilt(t *testing.T) {
	p := validParts()
	want := p.build().b
	data := want[p.build().dataAt:]
	kv := []KV{
		{"general.architecture", ValueOf("llama")},
		{"test.scores", ArrayOf([]float32{0.5, -1.25, 3})},
	}
	ts := []TensorSpec{
		{Name: "a", Dims: []uint64{8, 2}, Type: TypeF32, Data: data[:64]},
		{Name: "b", Dims: []uint64{32, 3}, Type: TypeQ8_0, Stream: streamPieces(data[64:], 5)},
	}
	var buf bytes.Buffer
	if err := Write(&buf, kv, ts); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	// The writer pads the last tensor as ggml does; the builder does not.
	pad := padding(uint64(len(want)), DefaultAlignment)
	if !bytes.Equal(got, append(want, make([]byte, pad)...)) {
		t.Fatalf("bytes differ:\n got % x\nwant % x", got, want)
	}
}

func TestWriteRejectsBadInput(t *testing.T) {
	good := func() ([]KV, []TensorSpec) {
		return []KV{{"a", ValueOf(uint32(1))}},
			[]TensorSpec{{Name: "t", Dims: []uint64{32}, Type: TypeQ8_0, Data: make([]byte, 34)}}
	}
	cases := []struct {
		name  string
		edit  func(kv []KV, ts []TensorSpec) ([]KV, []TensorSpec)
		words string
	}{
		{"duplicate key", func(kv []KV, ts []TensorSpec) ([]KV, []TensorSpec) { return append(kv, kv[0]), ts }, "duplicate metadata key"},
		{"alignment 24", func(kv []KV, ts []TensorSpec) ([]KV, []TensorSpec) {
			return append(kv, KV{"general.alignment", ValueOf(uint32(24))}), ts
		}, "power of two"},
		{"alignment int", func(kv []KV, ts []TensorSpec) ([]KV, []TensorSpec) {
			return append(kv, KV{"general.alignment", ValueOf(32)}), ts
		}, "must be a uint32"},
		{"Go type mismatch", func(kv []KV, ts []TensorSpec) ([]KV, []TensorSpec) {
			kv[0].Value.V = "x"
			return kv, ts
		}, "holds Go type string"},
		{"unsupported Go type", func(kv []KV, ts []TensorSpec) ([]KV, []TensorSpec) {
			kv[0].Value = ValueOf(struct{}{})
			return kv, ts
		}, "unsupported value type"},
		{"array mismatch", func(kv []KV, ts []TensorSpec) ([]KV, []TensorSpec) {
			kv[0].Value = Value{ValueArray, Array{ValueInt32, []float32{1}}}
			return kv, ts
		}, "array of int32 holds Go type []float32"},
		{"duplicate tensor", func(kv []KV, ts []TensorSpec) ([]KV, []TensorSpec) { return kv, append(ts, ts[0]) }, "duplicate tensor name"},
		{"short data", func(kv []KV, ts []TensorSpec) ([]KV, []TensorSpec) { ts[0].Data = ts[0].Data[:33]; return kv, ts }, "has 33 data bytes, want 34"},
		{"partial block", func(kv []KV, ts []TensorSpec) ([]KV, []TensorSpec) { ts[0].Dims = []uint64{31}; return kv, ts }, "block size 32"},
		{"long name", func(kv []KV, ts []TensorSpec) ([]KV, []TensorSpec) {
			ts[0].Name = strings.Repeat("x", 64)
			return kv, ts
		}, "longer than 63"},
		{"stream short", func(kv []KV, ts []TensorSpec) ([]KV, []TensorSpec) {
			ts[0].Data, ts[0].Stream = nil, streamPieces(make([]byte, 30), 4)
			return kv, ts
		}, "stream wrote 30 bytes, want 34"},
		{"stream long", func(kv []KV, ts []TensorSpec) ([]KV, []TensorSpec) {
			ts[0].Data, ts[0].Stream = nil, streamPieces(make([]byte, 40), 8)
			return kv, ts
		}, "more than the tensor's 34 bytes"},
	}
	for _, c := range cases {
		kv, ts := c.edit(good())
		err := Write(io.Discard, kv, ts)
		if err == nil || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.words)
		}
	}
}

func TestWriteFileFailureKeepsTarget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	os.WriteFile(path, []byte("old"), 0o644)
	boom := errors.New("boom")
	ts := []TensorSpec{{Name: "t", Dims: []uint64{4}, Type: TypeF32, Stream: func(io.Writer) error { return boom }}}
	if err := WriteFile(path, nil, ts); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("target changed to %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

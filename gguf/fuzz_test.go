package gguf

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse. Whatever it accepts must give
// in-bounds tensor data and survive a write → parse → write round trip
// byte for byte; whatever it rejects must be a *FormatError inside the input.
func FuzzParse(f *testing.F) {
	f.Add(validParts().build().b)
	for _, c := range hostileCases {
		p := validParts()
		c.parts(&p)
		f.Add(p.build().b)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 8; i++ {
		var buf bytes.Buffer
		kv := []KV{{"general.architecture", ValueOf("llama")}, {"x", randomValue(r, 0)}}
		if err := Write(&buf, kv, randomTensors(r, 1+r.IntN(3))); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Offset < 0 || fe.Offset > int64(len(b)) {
				t.Fatalf("bad error %T %v", err, err)
			}
			return
		}
		first := rewrite(t, file)
		again, err := Parse(first)
		if err != nil {
			t.Fatalf("rewritten file does not parse: %v", err)
		}
		if second := rewrite(t, again); !bytes.Equal(first, second) {
			t.Fatal("write → parse → write is not stable")
		}
	})
}

// rewrite writes a parsed file back out, reading every tensor's bytes.
func rewrite(t *testing.T, f *File) []byte {
	ts := make([]TensorSpec, len(f.Tensors))
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		data := f.TensorData(ti)
		if uint64(len(data)) != ti.Size {
			t.Fatalf("%s: %d bytes, want %d", ti.Name, len(data), ti.Size)
		}
		ts[i] = TensorSpec{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Data: data}
		if len(data) == 0 {
			ts[i].Data = []byte{}
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, f.KV, ts); err != nil {
		t.Fatalf("writing a parsed file: %v", err)
	}
	return buf.Bytes()
}

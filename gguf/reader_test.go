package gguf

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenSharedModels(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(sharedDir(t), "models", "*.gguf"))
	if len(paths) == 0 {
		t.Skip("../shared/models holds no .gguf files")
	}
	for _, p := range paths {
		f, err := Open(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if f.Architecture() != "llama" || len(f.Tensors) == 0 {
			t.Errorf("%s: arch %q, %d tensors", p, f.Architecture(), len(f.Tensors))
		}
		for i := range f.Tensors {
			if got := len(f.TensorData(&f.Tensors[i])); uint64(got) != f.Tensors[i].Size {
				t.Errorf("%s: %s: %d bytes, want %d", p, f.Tensors[i].Name, got, f.Tensors[i].Size)
			}
		}
		f.Close()
	}
}

func TestParseRejectsBadMagic(t *testing.T) {
	_, err := Parse([]byte("GGML\x03\x00\x00\x00"))
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v, want FormatError", err)
	}
}

func TestOpenEmptyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "empty.gguf")
	os.WriteFile(p, nil, 0o644)
	if _, err := Open(p); err == nil {
		t.Fatal("empty file opened without error")
	}
}

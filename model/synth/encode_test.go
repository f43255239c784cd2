package synth

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// TestEncodeRowsChunks spans several chunks and batches (with a partial
// last chunk) and must equal quantizing the whole matrix at once.
func TestEncodeRowsChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), 3))
	for _, c := range []struct {
		typ        gguf.TensorType
		rows, cols int
	}{{gguf.TypeQ8_0, 20000, 32}, {gguf.TypeQ4_K, 700, 512}, {gguf.TypeF16, 3, 100}} {
		src := make([]float32, c.rows*c.cols)
		for i := range src {
			src[i] = float32(r.NormFloat64())
		}
		want, err := quant.QuantizeAlloc(c.typ, src)
		if err != nil {
			t.Fatal(err)
		}
		fill := func(row int, dst []float32) error { copy(dst, src[row*c.cols:]); return nil }
		for _, workers := range []int{1, 3} {
			var buf bytes.Buffer
			if err := EncodeRows(&buf, c.typ, c.rows, c.cols, fill, workers); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s %dx%d, %d workers: bytes differ", c.typ, c.rows, c.cols, workers)
			}
		}
	}
}

func TestEncodeRowsErrors(t *testing.T) {
	boom := errors.New("boom")
	fill := func(row int, dst []float32) error {
		if row == 4000 {
			return boom
		}
		return nil
	}
	if err := EncodeRows(&bytes.Buffer{}, gguf.TypeQ8_0, 5000, 32, fill, 2); !errors.Is(err, boom) {
		t.Errorf("fill error: got %v", err)
	}
	if err := EncodeRows(&bytes.Buffer{}, gguf.TypeIQ2_XS, 1, 256, fill, 2); !errors.Is(err, quant.ErrReadOnly) {
		t.Errorf("IQ2_XS: got %v", err)
	}
	if err := EncodeRows(&bytes.Buffer{}, gguf.TypeMXFP4, 1, 256, fill, 2); !errors.Is(err, quant.ErrUnsupported) {
		t.Errorf("MXFP4: got %v", err)
	}
	if err := EncodeRows(&bytes.Buffer{}, gguf.TypeQ4_0, 1, 33, fill, 2); err == nil {
		t.Error("33 columns of Q4_0 accepted")
	}
}

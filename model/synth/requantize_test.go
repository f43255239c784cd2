package synth

import (
	"bytes"
	"math"
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

func requantBytes(t *testing.T, in *gguf.File, typ string) []byte {
	t.Helper()
	ft, err := ParseFileType(typ)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Requantize(in, &buf, RequantizeOptions{Type: ft}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRequantize converts F32 models (stories260K, whose 172-wide rows allow
// only float types, and a synthetic one): converted tensors must equal
// quantizing the input whole, others must be copied, and metadata kept in
// order with the file type appended.
func TestRequantize(t *testing.T) {
	tinyF32 := parseT(t, synthBytes(t, tiny, "f32", 9, 2))
	for _, c := range []struct {
		in  *gguf.File
		typ string
	}{{stories(t), "f16"}, {stories(t), "bf16"}, {tinyF32, "q8_0"}, {tinyF32, "q4_k_m"}, {tinyF32, "q5_1"}} {
		out := parseT(t, requantBytes(t, c.in, c.typ))
		for i := range out.Tensors {
			ti := &out.Tensors[i]
			src, _ := c.in.Tensor(ti.Name)
			want := c.in.TensorData(src)
			if ti.Type != src.Type {
				want, _ = quant.QuantizeAlloc(ti.Type, floats(t, c.in, ti.Name))
			}
			if !bytes.Equal(out.TensorData(ti), want) {
				t.Errorf("%s %s (%s): bytes differ", c.typ, ti.Name, ti.Type)
			}
		}
		checkRequantKV(t, c.typ, c.in, out)
	}
}

func checkRequantKV(t *testing.T, typ string, in, out *gguf.File) {
	ft, _ := ParseFileType(typ)
	var kept []string
	for _, kv := range in.KV {
		if !droppedKeys[kv.Key] {
			kept = append(kept, kv.Key)
		}
	}
	kept = append(kept, "general.quantization_version", "general.file_type")
	if len(out.KV) != len(kept) || out.Uint32("general.file_type", 999) != ft.ID {
		t.Fatalf("%s: %d keys, want %d; file type %d", typ, len(out.KV), len(kept), out.Uint32("general.file_type", 999))
	}
	for i, k := range kept {
		if out.KV[i].Key != k {
			t.Errorf("%s: key %d is %s, want %s", typ, i, out.KV[i].Key, k)
		}
	}
}

// TestRequantizeLikeLlamaCpp converts the shared F16 model and compares
// with the files llama-quantize made from the same weights: identical tensor
// tables (names, order, types, shapes, offsets) and metadata keys, and
// values within the quantization error of llama.cpp's.
func TestRequantizeLikeLlamaCpp(t *testing.T) {
	in := sharedModel(t, "synth-15m-f16.gguf")
	for typ, file := range map[string]string{"q4_k_m": "synth-15m-q4_k_m.gguf", "q4_0": "synth-15m-q4_0.gguf", "q8_0": "synth-15m-q8_0.gguf"} {
		ref := sharedModel(t, file)
		out := parseT(t, requantBytes(t, in, typ))
		if len(out.Tensors) != len(ref.Tensors) || out.DataOffset != ref.DataOffset {
			t.Fatalf("%s: %d tensors at %d, llama.cpp %d at %d", typ, len(out.Tensors), out.DataOffset, len(ref.Tensors), ref.DataOffset)
		}
		for i := range ref.Tensors {
			a, b := out.Tensors[i], ref.Tensors[i]
			if a.Name != b.Name || a.Type != b.Type || a.Offset != b.Offset || a.Size != b.Size {
				t.Errorf("%s tensor %d: %s %s @%d, llama.cpp %s %s @%d", typ, i, a.Name, a.Type, a.Offset, b.Name, b.Type, b.Offset)
			}
		}
		for i := range ref.KV {
			if out.KV[i].Key != ref.KV[i].Key {
				t.Errorf("%s key %d: %s, llama.cpp %s", typ, i, out.KV[i].Key, ref.KV[i].Key)
			}
		}
		compareValues(t, typ, out, ref, "blk.2.ffn_down.weight")
		compareValues(t, typ, out, ref, "output.weight")
	}
}

// compareValues: both files quantize nearly the same weights (ours from F16,
// llama.cpp's from F32), so they differ by about one quantization step.
func compareValues(t *testing.T, typ string, a, b *gguf.File, name string) {
	x, y := floats(t, a, name), floats(t, b, name)
	var d2, y2 float64
	for i := range x {
		d := float64(x[i] - y[i])
		d2 += d * d
		y2 += float64(y[i]) * float64(y[i])
	}
	rel := math.Sqrt(d2 / y2)
	limit := map[string]float64{"q8_0": 0.02, "q4_0": 0.2, "q4_k_m": 0.2}[typ]
	if rel > limit || rel == 0 && typ == "q4_k_m" {
		t.Errorf("%s %s: relative RMS difference %.4f (limit %.2f)", typ, name, rel, limit)
	}
	t.Logf("%s %s: relative RMS difference from llama.cpp %.5f", typ, name, rel)
}

func TestRequantizeRejectsUnsupported(t *testing.T) {
	in := stories(t)
	ft, _ := ParseFileType("q4_0") // ffn rows of 172 are not whole blocks
	var buf bytes.Buffer
	if err := Requantize(in, &buf, RequantizeOptions{Type: ft}); err == nil || buf.Len() != 0 {
		t.Fatalf("got %v after %d bytes, want an error before writing", err, buf.Len())
	}
}

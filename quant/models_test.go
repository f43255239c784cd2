package quant

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/testenv"
)

// sharedDir returns ../shared beside the repository, skipping without it.
func sharedDir(t testing.TB) string { return testenv.Shared(t, "") }

func openModel(t testing.TB, name string) *gguf.File {
	t.Helper()
	path := filepath.Join(sharedDir(t), "models", name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("model %s absent: %v", name, err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func dequantTensor(t testing.TB, f *gguf.File, ti *gguf.TensorInfo) []float32 {
	t.Helper()
	out := make([]float32, ti.NumElements())
	if err := Dequantize(ti.Type, f.TensorData(ti), out); err != nil {
		t.Fatalf("%s: %v", ti.Name, err)
	}
	return out
}

var allModels = []string{
	"stories260K.gguf", "stories260K-F16.gguf", "stories260K-BF16.gguf",
	"synth-15m-f16.gguf", "synth-15m-q4_0.gguf", "synth-15m-q4_k_m.gguf", "synth-15m-q8_0.gguf",
}

func TestDequantizeEveryModelTensor(t *testing.T) {
	for _, name := range allModels {
		f := openModel(t, name)
		counts := map[gguf.TensorType]int{}
		for i := range f.Tensors {
			ti := &f.Tensors[i]
			out := dequantTensor(t, f, ti)
			for j, v := range out {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("%s %s[%d] = %v", name, ti.Name, j, v)
				}
			}
			counts[ti.Type]++
		}
		t.Logf("%s: %v", name, counts)
	}
}

// TestQuantizedModelsAgainstF16 requantizes the F16 weights with Quantize and
// compares with the tensors llama-quantize wrote.
func TestQuantizedModelsAgainstF16(t *testing.T) {
	ref := openModel(t, "synth-15m-f16.gguf")
	clear(legacyBlockStats)
	for _, name := range []string{"synth-15m-q4_0.gguf", "synth-15m-q4_k_m.gguf", "synth-15m-q8_0.gguf"} {
		f := openModel(t, name)
		stats := map[gguf.TensorType]*[2]int{} // exact, total
		for i := range f.Tensors {
			ti := &f.Tensors[i]
			rt, ok := ref.Tensor(ti.Name)
			if !ok {
				t.Fatalf("%s: %s missing from the F16 model", name, ti.Name)
			}
			if ti.Type == rt.Type {
				continue
			}
			src := dequantTensor(t, ref, rt)
			got, err := QuantizeAlloc(ti.Type, src)
			if err != nil {
				t.Fatal(err)
			}
			s := stats[ti.Type]
			if s == nil {
				s = new([2]int)
				stats[ti.Type] = s
			}
			s[1]++
			if bytes.Equal(got, f.TensorData(ti)) {
				s[0]++
				continue
			}
			checkRequantized(t, name, ti, f, got, src)
		}
		for typ, s := range stats {
			t.Logf("%s: %s tensors byte-identical %d/%d", name, typ, s[0], s[1])
		}
	}
	for typ, s := range legacyBlockStats {
		t.Logf("%s: %d elements proven identical to llama.cpp; %d with an ambiguous level, %d under an ambiguous scale", typ, s[0], s[1], s[2])
	}
}

// checkRequantized explains a byte mismatch. For the symmetric legacy types
// every differing block must be one whose decisions the F16 rounding of the
// master weights can flip; other types must be as accurate as llama.cpp's.
func checkRequantized(t *testing.T, name string, ti *gguf.TensorInfo, f *gguf.File, got []byte, src []float32) {
	t.Helper()
	want := f.TensorData(ti)
	if rule, ok := legacyRules[ti.Type]; ok {
		checkLegacyBlocks(t, name, ti, rule, got, want, src)
		return
	}
	bb, same := int(ti.Type.BlockBytes()), 0
	for b := 0; b < len(got)/bb; b++ {
		if bytes.Equal(got[b*bb:(b+1)*bb], want[b*bb:(b+1)*bb]) {
			same++
		}
	}
	ours := make([]float32, len(src))
	if err := Dequantize(ti.Type, got, ours); err != nil {
		t.Fatal(err)
	}
	theirs := dequantTensor(t, f, ti)
	eo, et := rmse(src, ours), rmse(src, theirs)
	blocks := len(got) / bb
	t.Logf("%s %s (%s): %d/%d super-blocks byte-identical; rmse vs F16 weights: ours %.6g llama.cpp %.6g",
		name, ti.Name, ti.Type, same, blocks, eo, et)
	if same < blocks/3 {
		t.Errorf("%s %s: only %d of %d blocks identical: the F16 rounding of the weights cannot explain that", name, ti.Name, same, blocks)
	}
	if eo > et*1.001 {
		t.Errorf("%s %s: our rmse %.6g worse than llama.cpp's %.6g", name, ti.Name, eo, et)
	}
}

// checkLegacyBlocks compares block by block: a differing scale must be
// ambiguous, and with equal scales every differing level must be.
func checkLegacyBlocks(t *testing.T, name string, ti *gguf.TensorInfo, rule legacyRule, got, want []byte, src []float32) {
	t.Helper()
	bb := int(ti.Type.BlockBytes())
	var g, w [qk]float32
	st := legacyBlockStats[ti.Type]
	for b := 0; b < len(got)/bb; b++ {
		gb, wb := got[b*bb:(b+1)*bb], want[b*bb:(b+1)*bb]
		scaleAmb, levelAmb := symmetricBlockAmbiguous(rule, src[b*qk:(b+1)*qk])
		if !bytes.Equal(gb[:2], wb[:2]) {
			if !scaleAmb {
				t.Errorf("%s %s block %d: scale differs from llama.cpp's though no input rounding explains it", name, ti.Name, b)
				return
			}
			st[2] += qk
			continue
		}
		if err := errors.Join(Dequantize(ti.Type, gb, g[:]), Dequantize(ti.Type, wb, w[:])); err != nil {
			t.Fatal(err)
		}
		for j := range g {
			switch {
			case levelAmb[j]:
				st[1]++
			case g[j] == w[j]:
				st[0]++
			default:
				t.Errorf("%s %s block %d element %d: level differs from llama.cpp's though no input rounding explains it", name, ti.Name, b, j)
				return
			}
		}
	}
	legacyBlockStats[ti.Type] = st
}

// legacyBlockStats counts elements per type: proven identical, with an
// ambiguous level, in a block with an ambiguous scale.
var legacyBlockStats = map[gguf.TensorType][3]int{}

func rmse(a, b []float32) float64 {
	var s float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return math.Sqrt(s / float64(len(a)))
}

// TestStoriesHalfPrecision checks that rounding the F32 weights of
// stories260K gives exactly the bits llama-quantize stored as F16 and BF16.
func TestStoriesHalfPrecision(t *testing.T) {
	ref := openModel(t, "stories260K.gguf")
	for _, name := range []string{"stories260K-F16.gguf", "stories260K-BF16.gguf"} {
		f := openModel(t, name)
		checked := 0
		for i := range f.Tensors {
			ti := &f.Tensors[i]
			rt, ok := ref.Tensor(ti.Name)
			if !ok || rt.Type != gguf.TypeF32 || ti.Type == gguf.TypeF32 {
				continue
			}
			got, err := QuantizeAlloc(ti.Type, dequantTensor(t, ref, rt))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, f.TensorData(ti)) {
				t.Errorf("%s %s: rounding the F32 weights does not give the stored bits", name, ti.Name)
			}
			checked++
		}
		if checked == 0 {
			t.Errorf("%s: no half-precision tensors found", name)
		}
		t.Logf("%s: %d tensors bit-identical", name, checked)
	}
}

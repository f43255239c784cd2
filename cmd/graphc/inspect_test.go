package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/model"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// llamaCppFacts are what llama.cpp reports for the shared models: tensor
// count, type histogram, and a few shapes (innermost dimension first).
var llamaCppFacts = map[string]struct {
	count  int
	types  map[string]int
	shapes map[string][]uint64
}{
	"stories260K.gguf":      {48, map[string]int{"F32": 48}, map[string][]uint64{"blk.0.attn_k.weight": {64, 32}, "blk.4.ffn_down.weight": {172, 64}}},
	"stories260K-F16.gguf":  {48, map[string]int{"F32": 11, "F16": 37}, map[string][]uint64{"token_embd.weight": {64, 512}}},
	"stories260K-BF16.gguf": {48, map[string]int{"F32": 11, "BF16": 37}, map[string][]uint64{"output.weight": {64, 512}}},
	"synth-15m-f16.gguf":    {57, map[string]int{"F32": 13, "F16": 44}, map[string][]uint64{"token_embd.weight": {288, 32000}}},
	"synth-15m-q8_0.gguf":   {57, map[string]int{"F32": 13, "Q8_0": 44}, map[string][]uint64{"blk.5.ffn_up.weight": {288, 768}}},
	"synth-15m-q4_0.gguf":   {57, map[string]int{"F32": 13, "Q4_0": 43, "Q8_0": 1}, map[string][]uint64{"output.weight": {288, 32000}}},
	"synth-15m-q4_k_m.gguf": {57, map[string]int{"F32": 13, "Q5_0": 35, "Q8_0": 3, "Q4_K": 4, "Q6_K": 2}, map[string][]uint64{"blk.2.ffn_down.weight": {768, 288}}},
}

func inspectDocOf(t *testing.T, path string) inspectDoc {
	t.Helper()
	var out bytes.Buffer
	if err := inspect([]string{path, "--json"}, &out); err != nil {
		t.Fatal(err)
	}
	var doc inspectDoc
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

func TestInspectSharedModels(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "..", "shared", "models")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("%s not found: shared test models are absent", dir)
	}
	for name, want := range llamaCppFacts {
		doc := inspectDocOf(t, filepath.Join(dir, name))
		if doc.Architecture != "llama" || len(doc.Tensors) != want.count {
			t.Errorf("%s: arch %q, %d tensors, want llama, %d", name, doc.Architecture, len(doc.Tensors), want.count)
		}
		hist := map[string]int{}
		for _, tj := range doc.Tensors {
			hist[tj.Type]++
			if s, ok := want.shapes[tj.Name]; ok && !slices.Equal(tj.Shape, s) {
				t.Errorf("%s %s: shape %v, want %v", name, tj.Name, tj.Shape, s)
			}
		}
		for typ, n := range want.types {
			if hist[typ] != n {
				t.Errorf("%s: %d %s tensors, want %d (all: %v)", name, hist[typ], typ, n, hist)
			}
		}
		checkSummaries(t, name, doc.Metadata)
	}
}

func checkSummaries(t *testing.T, name string, md map[string]any) {
	tokens, _ := md["tokenizer.ggml.tokens"].(map[string]any)
	if tokens["type"] != "array" || tokens["elem"] != "string" || tokens["len"] == nil {
		t.Errorf("%s: tokens summary %v", name, md["tokenizer.ggml.tokens"])
	}
	if md["llama.attention.layer_norm_rms_epsilon"] != 1e-05 {
		t.Errorf("%s: epsilon %v", name, md["llama.attention.layer_norm_rms_epsilon"])
	}
}

// TestInspectJSONSchema writes a file with short, long and nested arrays and
// checks the JSON against the values written.
func TestInspectJSONSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	long := make([]int32, 17)
	kv := []gguf.KV{
		{Key: "general.architecture", Value: gguf.ValueOf("llama")},
		{Key: "short", Value: gguf.ArrayOf([]string{"a", "b"})},
		{Key: "long", Value: gguf.ArrayOf(long)},
		{Key: "nested", Value: gguf.ArrayOf([]gguf.Array{gguf.ArrayOf([]uint8{7}).V.(gguf.Array)})},
		{Key: "f", Value: gguf.ValueOf(float32(0.1))},
	}
	ts := []gguf.TensorSpec{{Name: "w", Dims: []uint64{32, 2}, Type: gguf.TypeQ8_0, Data: make([]byte, 68)},
		{Name: "n", Dims: []uint64{3}, Type: gguf.TypeF32, Data: make([]byte, 12)}}
	if err := gguf.WriteFile(path, kv, ts); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := inspect([]string{"--json", path}, &out); err != nil {
		t.Fatal(err)
	}
	want := `{"architecture":"llama",` +
		`"weft":{"architectures":["` + strings.Join(model.Architectures(), `","`) + `"],"supported":true,"error":"lowering llama: missing hyperparameter llama.embedding_length"},` +
		`"metadata":{"f":0.1,"general.architecture":"llama",` +
		`"long":{"elem":"int32","len":17,"type":"array"},"nested":[[7]],"short":["a","b"]},` +
		`"tensors":[{"name":"w","type":"Q8_0","shape":[32,2],"offset":0,"bytes":68},` +
		`{"name":"n","type":"F32","shape":[3],"offset":96,"bytes":12}]}`
	var compact bytes.Buffer
	json.Compact(&compact, out.Bytes())
	if compact.String() != want {
		t.Errorf("got  %s\nwant %s", compact.String(), want)
	}
}

func TestInspectText(t *testing.T) {
	var out bytes.Buffer
	if err := inspect([]string{filepath.Join(repoRoot(t), "testdata", "stories260K.gguf")}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"architecture: llama", "llama.block_count", "tokenizer: model llama", "512 tokens",
		`bos 1 "<s>"`, "blk.4.ffn_down.weight", "[172, 64]", "totals: 48 tensors", "F32 48"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text output lacks %q", want)
		}
	}
}

func TestInspectBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.gguf")
	os.WriteFile(path, []byte("GGUF\x07\x00\x00\x00 and more"), 0o644)
	err := inspect([]string{path}, &bytes.Buffer{})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "version 7") {
		t.Errorf("got %v, want one line naming version 7", err)
	}
	if err := inspect(nil, &bytes.Buffer{}); err == nil {
		t.Error("no arguments accepted")
	}
}

// The quantize and synth commands are tested here as well (this file is the
// test file of the three commands).

func TestQuantizeCommand(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(repoRoot(t), "testdata", "stories260K.gguf")
	out := filepath.Join(dir, "s-f16.gguf")
	if err := runQuantize([]string{in, out, "F16"}); err != nil {
		t.Fatal(err)
	}
	doc := inspectDocOf(t, out)
	hist := map[string]int{}
	for _, tj := range doc.Tensors {
		hist[tj.Type]++
	}
	if hist["F16"] != 37 || hist["F32"] != 11 || doc.Metadata["general.file_type"] != float64(1) {
		t.Errorf("types %v, file type %v", hist, doc.Metadata["general.file_type"])
	}
	if err := runQuantize([]string{out, filepath.Join(dir, "x.gguf"), "Q9_9"}); err == nil {
		t.Error("type Q9_9 accepted")
	}
}

func TestQuantizeRefusesItsInput(t *testing.T) {
	dir := t.TempDir()
	src, _ := os.ReadFile(filepath.Join(repoRoot(t), "testdata", "stories260K.gguf"))
	in := filepath.Join(dir, "in.gguf")
	os.WriteFile(in, src, 0o644)
	os.Symlink(in, filepath.Join(dir, "sym.gguf"))
	os.Link(in, filepath.Join(dir, "hard.gguf"))
	for _, out := range []string{in, filepath.Join(dir, "sym.gguf"), filepath.Join(dir, "hard.gguf"), dir + "/./in.gguf"} {
		err := runQuantize([]string{in, out, "F16"})
		if err == nil || !strings.Contains(err.Error(), "it is the input file") {
			t.Errorf("%s: got %v", out, err)
		}
	}
	if after, _ := os.ReadFile(in); !bytes.Equal(after, src) {
		t.Fatal("input changed")
	}
}

func TestSynthCommand(t *testing.T) {
	dir := t.TempDir()
	vocab := filepath.Join(repoRoot(t), "testdata", "stories260K.gguf")
	var files [][]byte
	for i, out := range []string{"a.gguf", "b.gguf"} {
		path := filepath.Join(dir, out)
		args := []string{"--shape", "260k", "--type", "f16", "--seed", "5", "-o", path, "--vocab", vocab, "--layers", "2"}
		if i == 1 { // flags in another order give the same model
			args = append(args[6:], args[:6]...)
		}
		if err := runSynth(args); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		files = append(files, b)
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Fatal("same seed gave different files")
	}
	doc := inspectDocOf(t, filepath.Join(dir, "a.gguf"))
	if len(doc.Tensors) != 3+2*9 || doc.Metadata["llama.block_count"] != float64(2) || doc.Metadata["llama.feed_forward_length"] != float64(172) {
		t.Errorf("%d tensors, metadata %v", len(doc.Tensors), doc.Metadata)
	}
	err := runSynth([]string{"-o", filepath.Join(dir, "c.gguf"), "--shape", "260k", "--vocab", filepath.Join(dir, "missing.gguf")})
	if err == nil || !strings.Contains(err.Error(), "missing.gguf") {
		t.Errorf("missing vocabulary: %v", err)
	}
}

package model

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/testenv"
)

func stories(t *testing.T) *gguf.File {
	f, err := gguf.Open(filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestLowerStories(t *testing.T) {
	l, err := Lower(stories(t))
	if err != nil {
		t.Fatal(err)
	}
	p := l.Params
	if p.Layers != 5 || p.Heads != 8 || p.KVHeads != 4 || p.HeadDim != 8 || p.VocabSize != 512 || p.RopeBase != 10000 {
		t.Fatalf("params %+v", p)
	}
	logits := l.Graph.Nodes[l.Graph.Outputs["logits"]]
	if logits.Type.String() != "F32[R,512]" {
		t.Fatalf("logits type %s", logits.Type)
	}
	counts := map[string]int{}
	for _, n := range l.Graph.Nodes {
		counts[n.Op]++
	}
	if counts["Attention"] != 5 || counts["MatMul"] != 5*7+1 || counts["RoPE"] != 10 {
		t.Errorf("op counts %v", counts)
	}
}

// rewrite re-encodes f with edit applied to its metadata and tensors.
func rewrite(t *testing.T, f *gguf.File, edit func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec)) *gguf.File {
	var kv []gguf.KV
	kv = append(kv, f.KV...)
	var ts []gguf.TensorSpec
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		ts = append(ts, gguf.TensorSpec{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Data: f.TensorData(ti)})
	}
	kv, ts = edit(kv, ts)
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, ts); err != nil {
		t.Fatal(err)
	}
	g, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestLowerErrorsNameTheProblem(t *testing.T) {
	f := stories(t)
	noTensor := rewrite(t, f, func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
		for i := range ts {
			if ts[i].Name == "blk.2.ffn_up.weight" {
				ts = append(ts[:i], ts[i+1:]...)
				break
			}
		}
		return kv, ts
	})
	if _, err := Lower(noTensor); err == nil || !strings.Contains(err.Error(), "blk.2.ffn_up.weight") {
		t.Errorf("missing tensor: %v", err)
	}
	otherArch := rewrite(t, f, func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
		for i := range kv {
			if kv[i].Key == "general.architecture" {
				kv[i].Value = gguf.ValueOf("mamba")
			}
		}
		return kv, ts
	})
	if _, err := Lower(otherArch); err == nil || !strings.Contains(err.Error(), `unsupported architecture "mamba"`) {
		t.Errorf("unsupported architecture: %v", err)
	}
}

func TestTiedOutputUsesEmbedding(t *testing.T) {
	tied := rewrite(t, stories(t), func(kv []gguf.KV, ts []gguf.TensorSpec) ([]gguf.KV, []gguf.TensorSpec) {
		for i := range ts {
			if ts[i].Name == "output.weight" {
				ts = append(ts[:i], ts[i+1:]...)
				break
			}
		}
		return kv, ts
	})
	l, err := Lower(tied)
	if err != nil {
		t.Fatal(err)
	}
	g := l.Graph
	out := g.Nodes[g.Outputs["logits"]]
	if w := g.Nodes[out.Inputs[1]]; w.Tensor != "token_embd.weight" {
		t.Fatalf("output matmul reads %q", w.Tensor)
	}
}

package model

import (
	"fmt"
	"strings"

	"github.com/weft-ml/weft/gguf"
)

// Tensor declares one GGUF tensor an architecture reads. Shape is in weft
// order (outermost first: [rows, cols] for a matrix, [n] for a vector).
// Vectors (norm weights, biases) must be F32; matrices may have any type
// the backends read. An Optional tensor may be absent; present, its shape
// is checked like any other.
type Tensor struct {
	Name     string
	Shape    []int
	Optional bool
}

// Mat declares a [rows, cols] weight matrix.
func Mat(name string, rows, cols int) Tensor { return Tensor{Name: name, Shape: []int{rows, cols}} }

// Vec declares an F32 vector of n values.
func Vec(name string, n int) Tensor { return Tensor{Name: name, Shape: []int{n}} }

// Opt marks t optional.
func (t Tensor) Opt() Tensor { t.Optional = true; return t }

// PerLayer repeats the declarations of one layer, written with the layer
// prefix "blk.N.", for every layer.
func PerLayer(p Params, layer func(pre string) []Tensor) []Tensor {
	var ts []Tensor
	for il := range p.Layers {
		ts = append(ts, layer(fmt.Sprintf("blk.%d.", il))...)
	}
	return ts
}

// ggufDims is t's shape in GGUF order (innermost first).
func (t Tensor) ggufDims() []uint64 {
	d := make([]uint64, len(t.Shape))
	for i, n := range t.Shape {
		d[len(d)-1-i] = uint64(n)
	}
	return d
}

// checkTensors checks every declared tensor against the file and returns
// the present ones by name. All problems are reported, each naming its
// tensor, so a damaged or foreign file is diagnosed in one go.
func checkTensors(f *gguf.File, decls []Tensor) (map[string]Tensor, error) {
	found := map[string]Tensor{}
	var problems []string
	for _, d := range decls {
		t, ok := f.Tensor(d.Name)
		if !ok {
			if !d.Optional {
				problems = append(problems, fmt.Sprintf("missing tensor %q", d.Name))
			}
			continue
		}
		if err := checkTensor(t, d); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		found[d.Name] = d
	}
	switch {
	case len(problems) == 0:
		return found, nil
	case len(problems) > maxProblems:
		problems = append(problems[:maxProblems], fmt.Sprintf("and %d more", len(problems)-maxProblems))
	}
	return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
}

// maxProblems bounds the tensor problems listed in one error.
const maxProblems = 8

func checkTensor(t *gguf.TensorInfo, d Tensor) error {
	want := d.ggufDims()
	same := len(t.Dims) == len(want)
	for i := 0; same && i < len(want); i++ {
		same = t.Dims[i] == want[i]
	}
	if !same {
		return fmt.Errorf("tensor %q has GGUF dims %v, want %v", d.Name, t.Dims, want)
	}
	if len(d.Shape) == 1 && t.Type != gguf.TypeF32 {
		return fmt.Errorf("tensor %q has type %s, want F32", d.Name, t.Type)
	}
	return nil
}

// Bias says whether a projection or norm has a bias tensor.
type Bias uint8

const (
	NoBias       Bias = iota // never read, even when the file has one
	OptionalBias             // taken when present (llama.cpp's TENSOR_NOT_REQUIRED)
	WithBias                 // required
)

// linear declares tensor+".weight" [rows, cols] and its bias.
func linear(tensor string, rows, cols int, b Bias) []Tensor {
	ts := []Tensor{Mat(tensor+".weight", rows, cols)}
	return append(ts, bias(tensor, rows, b)...)
}

// norm declares tensor+".weight" [n] and its bias.
func norm(tensor string, n int, b Bias) []Tensor {
	return append([]Tensor{Vec(tensor+".weight", n)}, bias(tensor, n, b)...)
}

func bias(tensor string, n int, b Bias) []Tensor {
	switch b {
	case OptionalBias:
		return []Tensor{Vec(tensor+".bias", n).Opt()}
	case WithBias:
		return []Tensor{Vec(tensor+".bias", n)}
	}
	return nil
}

// attnTensors declares one layer's q, k, v and output projections:
// qkv is the bias of q, k and v, out that of the output.
func attnTensors(p Params, pre string, qkv, out Bias) []Tensor {
	var ts []Tensor
	ts = append(ts, linear(pre+"attn_q", p.QWidth(), p.Embd, qkv)...)
	ts = append(ts, linear(pre+"attn_k", p.KVWidth(), p.Embd, qkv)...)
	ts = append(ts, linear(pre+"attn_v", p.KVWidth(), p.Embd, qkv)...)
	return append(ts, linear(pre+"attn_output", p.Embd, p.QWidth(), out)...)
}

// fusedOrSeparateQKV declares one layer's attention projections when the
// q, k and v rows may be stored in one attn_qkv tensor instead of three
// (with bias b): every one optional, the lowering checks that one form is
// there (projectQKV).
func fusedOrSeparateQKV(p Params, pre string, b Bias) []Tensor {
	qkv := linear(pre+"attn_qkv", p.QWidth()+2*p.KVWidth(), p.Embd, b)
	ts := attnTensors(p, pre, b, b)
	for i := range ts {
		if !strings.HasPrefix(ts[i].Name, pre+"attn_output") {
			ts[i].Optional = true
		}
	}
	for i := range qkv {
		qkv[i].Optional = true
	}
	return append(ts, qkv...)
}

// ffnTensors declares one layer's feed-forward projections (gate only
// when gated), all with bias b.
func ffnTensors(p Params, pre string, gated bool, b Bias) []Tensor {
	var ts []Tensor
	if gated {
		ts = append(ts, linear(pre+"ffn_gate", p.FFN, p.Embd, b)...)
	}
	ts = append(ts, linear(pre+"ffn_up", p.FFN, p.Embd, b)...)
	return append(ts, linear(pre+"ffn_down", p.Embd, p.FFN, b)...)
}

// Output kinds: how the logits' weight is found.
type outputKind uint8

const (
	tiedOrUntied outputKind = iota // output.weight when present, else token_embd (llama, qwen2)
	alwaysTied                     // token_embd only (gemma)
	untied                         // output.weight required (phi2)
)

// globalTensors declares the embedding, the final norm (with bias nb) and
// the output projection (with bias ob).
func globalTensors(p Params, out outputKind, nb, ob Bias) []Tensor {
	ts := []Tensor{Mat("token_embd.weight", p.VocabSize, p.Embd)}
	ts = append(ts, norm("output_norm", p.Embd, nb)...)
	switch out {
	case tiedOrUntied:
		ts = append(ts, Mat("output.weight", p.VocabSize, p.Embd).Opt())
		ts = append(ts, bias("output", p.VocabSize, ob)...)
	case untied:
		ts = append(ts, linear("output", p.VocabSize, p.Embd, ob)...)
	}
	return ts
}

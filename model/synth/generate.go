package synth

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/weft-ml/weft/gguf"
)

// Options describe a synthetic model.
type Options struct {
	Shape    Shape
	Type     FileType
	Seed     uint64
	Vocab    *gguf.File // tokenizer.* keys are copied from it
	Name     string     // general.name; "" gives "weft-synth"
	Workers  int        // conversion goroutines; 0 means 2
	Progress io.Writer  // one line per tensor; nil for silence
}

// quantizationVersion is ggml's GGML_QNT_VERSION, stored by llama-quantize.
const quantizationVersion = 2

// Write streams a model with deterministic random weights to w: the same
// options always give the same bytes.
func Write(w io.Writer, o Options) error {
	kv, specs, err := Build(o)
	if err != nil {
		return err
	}
	return gguf.Write(w, kv, specs)
}

// WriteFile is Write to a temporary file renamed to path on success; path
// may not be the vocabulary file the tokenizer is copied from.
func WriteFile(path string, o Options) error {
	kv, specs, err := Build(o)
	if err != nil {
		return err
	}
	var inputs []string
	if o.Vocab != nil {
		inputs = append(inputs, o.Vocab.Path())
	}
	return gguf.WriteFile(path, kv, specs, inputs...)
}

// Build returns the metadata and the streamed tensors of the model without
// generating any weights yet.
func Build(o Options) ([]gguf.KV, []gguf.TensorSpec, error) {
	s := o.Shape
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	tok, err := tokenizerKV(o.Vocab, s.Vocab)
	if err != nil {
		return nil, nil, err
	}
	specs, err := o.tensorSpecs()
	if err != nil {
		return nil, nil, err
	}
	return append(modelKV(o), tok...), specs, nil
}

// modelKV is the general and hyperparameter metadata: the shape's sizes
// under "<arch>." plus the architecture's own keys.
func modelKV(o Options) []gguf.KV {
	s, name := o.Shape, o.Name
	if name == "" {
		name = "weft-synth"
	}
	a, _ := s.spec()
	arch := s.arch()
	kv := []gguf.KV{
		{Key: "general.architecture", Value: gguf.ValueOf(arch)},
		{Key: "general.name", Value: gguf.ValueOf(name)},
		u32(arch+".context_length", s.Ctx),
		u32(arch+".embedding_length", s.Dim),
		u32(arch+".block_count", s.Layers),
		u32(arch+".feed_forward_length", s.FFN),
		u32(arch+".attention.head_count", s.Heads),
		u32(arch+".attention.head_count_kv", s.KVHeads),
	}
	kv = append(kv, a.keys(s)...)
	return append(kv, u32("general.file_type", int(o.Type.ID)), u32("general.quantization_version", quantizationVersion))
}

// tokenizerKV copies every tokenizer.* key of vocab, checking that its
// token list has the model's vocabulary size.
func tokenizerKV(vocab *gguf.File, n int) ([]gguf.KV, error) {
	if vocab == nil {
		return nil, errors.New("no vocabulary file given")
	}
	tokens, ok := vocab.Array("tokenizer.ggml.tokens")
	if !ok {
		return nil, errors.New("vocabulary file has no tokenizer.ggml.tokens")
	}
	if tokens.Len() != n {
		return nil, fmt.Errorf("vocabulary file has %d tokens but the shape needs %d: give a matching vocabulary or --vocab-size %d", tokens.Len(), n, tokens.Len())
	}
	var kv []gguf.KV
	for _, p := range vocab.KV {
		if strings.HasPrefix(p.Key, "tokenizer.") {
			kv = append(kv, p)
		}
	}
	return kv, nil
}

func (o Options) tensorSpecs() ([]gguf.TensorSpec, error) {
	shapes := o.Shape.tensors()
	names := make([]string, len(shapes))
	for i, ts := range shapes {
		names[i] = ts.name
	}
	mixer := NewMixer(o.Type, Hparams{o.Shape.Layers, o.Shape.Heads, o.Shape.KVHeads}, names)
	specs := make([]gguf.TensorSpec, len(shapes))
	for i, ts := range shapes {
		t, err := mixer.TypeFor(ts.name, ts.dims, gguf.TypeF32)
		if err != nil {
			return nil, err
		}
		specs[i] = gguf.TensorSpec{Name: ts.name, Dims: ts.dims, Type: t, Stream: o.stream(i, len(shapes), ts, t)}
	}
	return specs, nil
}

// stream returns the writer of tensor i: norm weights are all ones, other
// weights and biases random from a stream seeded by the seed, the tensor's
// index and the row.
func (o Options) stream(i, n int, ts tensorShape, t gguf.TensorType) func(io.Writer) error {
	cols := int(ts.dims[0])
	rows := 1
	for _, d := range ts.dims[1:] {
		rows *= int(d)
	}
	fill := func(r int, dst []float32) error {
		p := newRowPRNG(o.Seed, i, r)
		p.fillWeights(dst)
		return nil
	}
	if len(ts.dims) == 1 && !strings.HasSuffix(ts.name, ".bias") {
		fill = func(_ int, dst []float32) error {
			for k := range dst {
				dst[k] = 1
			}
			return nil
		}
	}
	return func(w io.Writer) error {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "[%4d/%4d] %-28s %-5s %v\n", i+1, n, ts.name, t, ts.dims)
		}
		return EncodeRows(w, t, rows, cols, fill, o.workers())
	}
}

func (o Options) workers() int {
	if o.Workers <= 0 {
		return 2
	}
	return o.Workers
}

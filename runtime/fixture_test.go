package runtime

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
)

// fixture builds a small random-weight model of some architecture with
// stories260K's 512-token vocabulary, for tests against llama.cpp
// references made from the same bytes: every tensor is drawn from one
// fixed PCG stream in the order it is added.
type fixture struct {
	t     *testing.T
	arch  string
	kv    []gguf.KV
	ts    []gguf.TensorSpec
	rng   *rand.Rand
	vocab int
}

// newFixture starts a model of arch with the vocabulary's keys.
func newFixture(t *testing.T, arch string, seed uint64) *fixture {
	t.Helper()
	voc, err := gguf.Open(filepath.Join("..", "testdata", "stories260K.gguf"))
	require.NoError(t, err)
	defer voc.Close()
	f := &fixture{t: t, arch: arch, rng: rand.New(rand.NewPCG(seed, 0xfeed))}
	f.kv = append(f.kv, gguf.KV{Key: "general.architecture", Value: gguf.ValueOf(arch)})
	for _, e := range voc.KV {
		if strings.HasPrefix(e.Key, "tokenizer.") {
			f.kv = append(f.kv, e)
		}
	}
	emb, ok := voc.Tensor("token_embd.weight")
	require.True(t, ok)
	f.vocab = int(emb.Dims[1])
	return f
}

// key sets ARCH.name: ints as UINT32, float32s as FLOAT32.
func (f *fixture) key(name string, v any) {
	switch x := v.(type) {
	case int:
		v = uint32(x)
	}
	f.kv = append(f.kv, gguf.KV{Key: f.arch + "." + name, Value: gguf.ValueOf(v)})
}

// tensor adds an F32 tensor of rows × cols (a vector when rows is 1).
func (f *fixture) tensor(name string, rows, cols int, fill func() float32) {
	data := make([]byte, 4*rows*cols)
	for i := range rows * cols {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(fill()))
	}
	dims := []uint64{uint64(cols), uint64(rows)}
	if rows == 1 {
		dims = []uint64{uint64(cols)}
	}
	f.ts = append(f.ts, gguf.TensorSpec{Name: name, Dims: dims, Type: gguf.TypeF32, Data: data})
}

// normal draws N(0, sd²) values; ones fills with 1.
func (f *fixture) normal(sd float64) func() float32 {
	return func() float32 { return float32(sd * f.rng.NormFloat64()) }
}

func ones() float32 { return 1 }

// write writes the model as dir/name.gguf and returns its path.
func (f *fixture) write(dir, name string) string {
	path := filepath.Join(dir, name+".gguf")
	require.NoError(f.t, gguf.WriteFile(path, f.kv, f.ts))
	return path
}

package cpu

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/model/synth"
	"github.com/weft-ml/weft/quant"
)

// TestConvertF16ToBF16 converts every binary16 bit pattern, in random
// order and at an awkward length spread over several goroutines (the
// chunking), and compares each value with quant's F16 → F32 → BF16.
func TestConvertF16ToBF16(t *testing.T) {
	const n = 3<<20 + 7 // 3 whole chunks and a partial one
	rng := rand.New(rand.NewPCG(rand.Uint64(), 3))
	src := make([]byte, 2*n)
	for i := range n {
		h := uint16(i) // every pattern at least once…
		if i >= 1<<16 {
			h = uint16(rng.Uint32()) // …then random ones
		}
		binary.LittleEndian.PutUint16(src[2*i:], h)
	}
	rng.Shuffle(n, func(i, j int) {
		a, b := binary.LittleEndian.Uint16(src[2*i:]), binary.LittleEndian.Uint16(src[2*j:])
		binary.LittleEndian.PutUint16(src[2*i:], b)
		binary.LittleEndian.PutUint16(src[2*j:], a)
	})
	for _, threads := range []int{1, 3} {
		dst := make([]byte, len(src))
		convertF16ToBF16(dst, src, threads)
		bad := 0
		for i := range n {
			h := binary.LittleEndian.Uint16(src[2*i:])
			if want, got := quant.FP32ToBF16(quant.FP16ToFP32(h)), binary.LittleEndian.Uint16(dst[2*i:]); got != want && bad < 5 {
				bad++
				t.Errorf("%d threads: value %d: f16 %#04x gave bf16 %#04x, want %#04x", threads, i, h, got, want)
			}
		}
	}
}

// TestF16AsBF16 compiles F16 synthetic models with Options.F16AsBF16 and
// requires the logits of a BF16 model holding the same weights converted
// element by element with quant (a graph and weights made here, without
// asBF16Graph): bit for bit, prefill and decode. Tied, the token table is
// converted and its lookups read BF16 rows; untied, token_embd (read by
// GetRows alone) stays F16.
func TestF16AsBF16(t *testing.T) {
	vocab, err := gguf.Open(filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf"))
	require.NoError(t, err)
	defer vocab.Close()
	ft, err := synth.ParseFileType("f16")
	require.NoError(t, err)
	for _, tied := range []bool{true, false} {
		t.Run(map[bool]string{true: "tied", false: "untied"}[tied], func(t *testing.T) {
			var buf bytes.Buffer
			shape := synth.Shape{Dim: 96, FFN: 160, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 512, Ctx: 64, Tied: tied}
			require.NoError(t, synth.Write(&buf, synth.Options{Shape: shape, Type: ft, Seed: 9, Vocab: vocab}))
			f, err := gguf.Parse(buf.Bytes())
			require.NoError(t, err)
			g, _ := compileSynth(t, f, false)

			p, err := Compile(g, f, Options{MaxTokens: 9, Threads: 3, F16AsBF16: true})
			require.NoError(t, err)
			n, size := p.BF16Weights()
			want, wantSize, table := 0, int64(0), gguf.TypeF16
			bf := bf16Weights{f, map[string]bool{}}
			ref := g.Clone()
			for _, w := range ref.Nodes {
				if w.Op != "Weight" || w.Type.DType != gguf.TypeF16 {
					continue
				}
				if w.Tensor == "token_embd.weight" && !tied {
					continue
				}
				if w.Tensor == "token_embd.weight" {
					table = gguf.TypeBF16
				}
				w.Type.DType, bf.names[w.Tensor] = gguf.TypeBF16, true
				want++
				wantSize += 2 * w.Type.Shape[0].N * w.Type.Shape[1].N
			}
			assert.Equal(t, want, n, "weights converted")
			assert.Equal(t, wantSize, size, "bytes converted")
			for _, w := range p.Graph().Nodes {
				if w.Tensor == "token_embd.weight" {
					assert.Equal(t, table, w.Type.DType, "the token table's type")
				}
			}
			for _, w := range g.Nodes {
				assert.NotEqual(t, gguf.TypeBF16, w.Type.DType, "the caller's graph was changed")
			}
			expect, err := Compile(ref, bf, Options{MaxTokens: 9, Threads: 3})
			require.NoError(t, err)
			seed := rand.Uint64()
			got, exp := runProgram(t, p, seed), runProgram(t, expect, seed)
			plain, err := Compile(g, f, Options{MaxTokens: 9, Threads: 3})
			require.NoError(t, err)
			f16 := runProgram(t, plain, seed)
			for b := range exp {
				require.Equal(t, exp[b], got[b], "batch %d: logits differ from the BF16 model's", b)
				require.NotEqual(t, f16[b], got[b], "batch %d: logits equal the F16 run's", b)
			}
			require.NoError(t, p.Close())
			require.NoError(t, p.Close(), "a second Close")
		})
	}
}

// bf16Weights serves a file's F16 tensors named in names as BF16,
// converted one value at a time with quant.
type bf16Weights struct {
	*gguf.File
	names map[string]bool
}

func (w bf16Weights) Tensor(name string) (*gguf.TensorInfo, bool) {
	t, ok := w.File.Tensor(name)
	if !ok || !w.names[name] {
		return t, ok
	}
	c := *t
	c.Type = gguf.TypeBF16
	return &c, true
}

func (w bf16Weights) TensorData(t *gguf.TensorInfo) []byte {
	if !w.names[t.Name] {
		return w.File.TensorData(t)
	}
	orig, _ := w.File.Tensor(t.Name)
	src := w.File.TensorData(orig)
	dst := make([]byte, len(src))
	for i := 0; i < len(src); i += 2 {
		h := binary.LittleEndian.Uint16(src[i:])
		binary.LittleEndian.PutUint16(dst[i:], quant.FP32ToBF16(quant.FP16ToFP32(h)))
	}
	return dst
}

// runProgram runs batches of 9, 3, 1 and 1 random tokens from seed.
func runProgram(t *testing.T, p *Program, seed uint64) [][]float32 {
	t.Helper()
	return runProgramWith(t, p, rand.New(rand.NewPCG(seed, 17)))
}

// runProgramWith runs batches of 9, 3, 1 and 1 tokens drawn from rng (a
// 512-token vocabulary) on a fresh state, returning each batch's logits.
func runProgramWith(t *testing.T, p *Program, rng *rand.Rand) [][]float32 {
	t.Helper()
	s, err := p.NewState(32, KVF16)
	require.NoError(t, err)
	var out [][]float32
	pos := 0
	for _, n := range []int{9, 3, 1, 1} {
		tokens := make([]int32, n)
		for i := range tokens {
			tokens[i] = int32(rng.IntN(512))
		}
		logits, err := s.Run(tokens, seq(pos, n), seq(0, n))
		require.NoError(t, err)
		out, pos = append(out, append([]float32(nil), logits...)), pos+n
	}
	return out
}

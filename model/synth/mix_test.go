package synth

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
)

// TestMixMatchesLlamaCpp replays llama-quantize's choices: every tensor of
// the shared models (made by llama.cpp from F32 weights) must get the type
// llama.cpp gave it, and the files' tensor order must be llama order.
func TestMixMatchesLlamaCpp(t *testing.T) {
	for _, name := range []string{"synth-15m-q4_k_m.gguf", "synth-15m-q4_0.gguf", "synth-15m-q8_0.gguf",
		"synth-15m-f16.gguf", "stories260K-F16.gguf", "stories260K-BF16.gguf"} {
		t.Run(name, func(t *testing.T) {
			f := sharedModel(t, name)
			ft := mustFileType(t, f.Uint32("general.file_type", 999))
			names := tensorNames(f)
			ordered := slices.Clone(names)
			Order(ordered)
			if !slices.Equal(names, ordered) && f.Uint32("general.quantization_version", 0) != 0 {
				t.Errorf("file order %v is not llama order", names[:5])
			}
			m := NewMixer(ft, hparamsOf(f), names)
			for _, n := range ordered {
				ti, _ := f.Tensor(n)
				got, err := m.TypeFor(n, ti.Dims, gguf.TypeF32)
				if err != nil || got != ti.Type {
					t.Errorf("%s: got %s (%v), llama.cpp chose %s", n, got, err, ti.Type)
				}
			}
		})
	}
}

func mustFileType(t *testing.T, id uint32) FileType {
	t.Helper()
	ft, err := ParseFileType(FileTypeName(id))
	if err != nil {
		t.Fatalf("file type %d: %v", id, err)
	}
	return ft
}

func tensorNames(f *gguf.File) []string {
	names := make([]string, len(f.Tensors))
	for i, ti := range f.Tensors {
		names[i] = ti.Name
	}
	return names
}

// TestMixTinyLlamaQ4KM checks the Q4_K_M choices for a 22-layer model
// against use_more_bits worked out by hand: layers 0, 1, 19, 20, 21 and
// every third from layer 4 get Q6_K in attn_v and ffn_down.
func TestMixTinyLlamaQ4KM(t *testing.T) {
	s := Presets["tinyllama-1.1b"]
	ft, _ := ParseFileType("q4_k_m")
	specs, err := Options{Shape: s, Type: ft}.tensorSpecs()
	if err != nil {
		t.Fatal(err)
	}
	q6 := map[int]bool{0: true, 1: true, 4: true, 7: true, 10: true, 13: true, 16: true, 19: true, 20: true, 21: true}
	want := map[string]gguf.TensorType{"output.weight": gguf.TypeQ6_K, "token_embd.weight": gguf.TypeQ4_K, "output_norm.weight": gguf.TypeF32}
	for i := 0; i < 22; i++ {
		hi := pick(q6[i], gguf.TypeQ6_K, gguf.TypeQ4_K)
		for suffix, typ := range map[string]gguf.TensorType{"attn_v": hi, "ffn_down": hi, "attn_q": gguf.TypeQ4_K,
			"attn_k": gguf.TypeQ4_K, "attn_output": gguf.TypeQ4_K, "ffn_gate": gguf.TypeQ4_K, "ffn_up": gguf.TypeQ4_K,
			"attn_norm": gguf.TypeF32, "ffn_norm": gguf.TypeF32} {
			want[fmt.Sprintf("blk.%d.%s.weight", i, suffix)] = typ
		}
	}
	if len(specs) != len(want) {
		t.Fatalf("%d tensors, want %d", len(specs), len(want))
	}
	for _, sp := range specs {
		if sp.Type != want[sp.Name] {
			t.Errorf("%s: %s, want %s", sp.Name, sp.Type, want[sp.Name])
		}
	}
}

// TestMixTinyLlamaIQ4 checks the IQ4_NL/IQ4_XS rules without an importance
// matrix: with 8 query heads per KV head attn_v gets Q5_K, and so does
// ffn_down in the first eighth of the layers (0 and 1 of 22).
func TestMixTinyLlamaIQ4(t *testing.T) {
	for _, name := range []string{"iq4_xs", "iq4_nl"} {
		ft, err := ParseFileType(name)
		require.NoError(t, err)
		specs, err := Options{Shape: Presets["tinyllama-1.1b"], Type: ft}.tensorSpecs()
		require.NoError(t, err)
		for _, sp := range specs {
			want := ft.Base
			var layer int
			var part string
			fmt.Sscanf(sp.Name, "blk.%d.%s", &layer, &part)
			switch {
			case sp.Name == "output.weight":
				want = gguf.TypeQ6_K
			case strings.HasSuffix(sp.Name, "_norm.weight"):
				want = gguf.TypeF32
			case part == "attn_v.weight", part == "ffn_down.weight" && layer < 2:
				want = gguf.TypeQ5_K
			}
			assert.Equal(t, want, sp.Type, "%s %s", name, sp.Name)
		}
	}
}

func TestMixFallbacks(t *testing.T) {
	cases := []struct {
		ft   string
		name string
		nx   uint64
		want string
	}{
		{"q4_k_s", "blk.0.ffn_up.weight", 288, "Q5_0"},
		{"q5_k_m", "blk.0.attn_q.weight", 288, "Q5_1"},
		{"q6_k", "blk.0.attn_q.weight", 288, "Q8_0"},
		{"q6_k", "blk.0.attn_q.weight", 100, "F16"},
		{"q4_0", "blk.0.attn_q.weight", 100, "error"},
		{"q3_k_m", "blk.0.attn_q.weight", 288, "IQ4_NL"},
		{"q2_k", "blk.0.ffn_down.weight", 288, "IQ4_NL"}, // Q3_K in the mix, then its fallback
		{"q2_k", "blk.0.attn_q.weight", 100, "F16"},
		{"iq4_xs", "blk.0.attn_q.weight", 288, "IQ4_NL"},
		{"iq4_xs", "blk.0.attn_q.weight", 512, "IQ4_XS"},
		{"iq4_nl", "blk.0.attn_q.weight", 288, "IQ4_NL"},
		{"iq4_nl", "blk.0.ffn_down.weight", 288, "IQ4_NL"}, // one layer: no first eighth
		{"iq4_nl", "output.weight", 288, "Q8_0"},
		{"tq2_0", "blk.0.attn_q.weight", 288, "Q4_0"},
		{"tq1_0", "blk.0.attn_q.weight", 512, "TQ1_0"},
		{"tq2_0", "token_embd.weight", 512, "Q4_K"},
		{"tq2_0", "output.weight", 512, "Q6_K"},
		{"q8_0", "output.weight", 288, "Q8_0"},
		{"q4_0", "output.weight", 288, "Q8_0"}, // Q6_K, then its 288-row fallback
		{"q4_0", "output.weight", 512, "Q6_K"},
		{"q4_0", "output.weight", 100, "error"},
		{"f16", "blk.0.attn_norm.weight", 288, "F32"},
	}
	for _, c := range cases {
		ft, _ := ParseFileType(c.ft)
		dims := []uint64{c.nx, 64}
		if c.name == "blk.0.attn_norm.weight" {
			dims = dims[:1]
		}
		m := NewMixer(ft, Hparams{Layers: 1, Heads: 1, KVHeads: 1}, []string{"output.weight", c.name})
		got, err := m.TypeFor(c.name, dims, gguf.TypeF32)
		if (err != nil) != (c.want == "error") || (err == nil && got.String() != c.want) {
			t.Errorf("%s %s [%d]: got %s, %v; want %s", c.ft, c.name, c.nx, got, err, c.want)
		}
	}
}

func TestReadOnlyFileTypes(t *testing.T) {
	for _, name := range []string{"iq2_xxs", "IQ1_M", "q2_k_s", "iq3_s"} {
		_, err := ParseFileType(name)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "importance matrix", name)
		assert.Contains(t, err.Error(), strings.ToUpper(name))
	}
	_, err := ParseFileType("q9_k")
	require.ErrorContains(t, err, "unknown type")
}

package synth

import (
	"fmt"
	"strings"

	"github.com/weft-ml/weft/gguf"
)

// Hparams are the model hyperparameters the mix rules look at.
type Hparams struct {
	Layers  int
	Heads   int
	KVHeads int
}

// Mixer chooses each tensor's type under a file type the way llama.cpp's
// llama_tensor_get_type does for llama models without experts and without
// an importance matrix. Its rules count tensors (attn_v, ffn_down), so
// TypeFor must be called once per tensor in llama order (see Order).
type Mixer struct {
	ft        FileType
	hp        Hparams
	nAttnV    int
	hasOutput bool
	iAttnV    int
	iFFNDown  int
}

// NewMixer prepares the rules for a model with the given tensor names.
func NewMixer(ft FileType, hp Hparams, names []string) *Mixer {
	m := &Mixer{ft: ft, hp: hp}
	for _, n := range names {
		switch {
		case strings.Contains(n, "attn_v.weight"), strings.Contains(n, "attn_qkv.weight"), strings.Contains(n, "attn_kv_b.weight"):
			m.nAttnV++
		case n == "output.weight":
			m.hasOutput = true
		}
	}
	return m
}

// Order sorts tensor names into llama.cpp's loader order, the order in which
// TypeFor must see them (and in which llama-quantize writes them).
func Order(names []string) { sortLlama(names) }

// notQuantized lists name fragments llama-quantize always leaves as they are.
var notQuantized = []string{
	"_norm.weight", "ffn_gate_inp.weight", "ssm_conv1d.weight", "attn_rel_b.weight",
	"time_mix_first.weight", "time_mix_w1.weight", "time_mix_w2.weight",
	"time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight",
}

// Quantizable reports whether llama-quantize would convert a tensor: a
// weight of at least two (non-trivial) dimensions that is not a norm or one
// of a few sensitive tensors.
func Quantizable(name string, dims []uint64) bool {
	if !strings.HasSuffix(name, "weight") || effectiveDims(dims) < 2 {
		return false
	}
	if name == "position_embd.weight" || name == "token_types.weight" {
		return false
	}
	for _, frag := range notQuantized {
		if strings.Contains(name, frag) {
			return false
		}
	}
	return true
}

// effectiveDims counts dimensions without trailing ones, as ggml_n_dims does.
func effectiveDims(dims []uint64) int {
	n := len(dims)
	for n > 1 && dims[n-1] == 1 {
		n--
	}
	return n
}

// TypeFor returns the type the tensor gets; current is its type now (kept
// for tensors that are not quantized).
func (m *Mixer) TypeFor(name string, dims []uint64, current gguf.TensorType) (gguf.TensorType, error) {
	if !Quantizable(name, dims) {
		return current, nil
	}
	t := m.ft.Base
	if !m.ft.quantized() {
		return t, nil
	}
	t = m.mix(name, dims, t)
	return fallback(name, dims[0], t)
}

func (m *Mixer) mix(name string, dims []uint64, t gguf.TensorType) gguf.TensorType {
	switch {
	case name == "output.weight" || (!m.hasOutput && name == "token_embd.weight"):
		return outputType(dims[0], t)
	case name == "token_embd.weight":
		if m.ft.ID == ftypeTQ1_0 || m.ft.ID == ftypeTQ2_0 {
			return gguf.TypeQ4_K
		}
		return t
	case strings.Contains(name, "attn_v.weight"):
		t = m.attnV(t)
		m.iAttnV++
	case strings.Contains(name, "ffn_down"):
		t = m.ffnDown(t)
		m.iFFNDown++
	case strings.Contains(name, "attn_output.weight"):
		t = m.attnOutput(t)
	case strings.Contains(name, "attn_qkv.weight"):
		t = m.attnQKV(t)
	}
	return t
}

// outputType: the output matrix gets Q6_K unless the mix is Q8_0 already;
// rows that are not whole K blocks get Q8_0.
func outputType(nx uint64, t gguf.TensorType) gguf.TensorType {
	switch {
	case nx%t.BlockSize() != 0:
		return gguf.TypeQ8_0
	case t != gguf.TypeQ8_0:
		return gguf.TypeQ6_K
	}
	return t
}

// useMoreBits picks the first and last eighth of the layers and every third
// layer between them.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

func (m *Mixer) gqa() int {
	if m.hp.KVHeads <= 0 {
		return 1
	}
	return m.hp.Heads / m.hp.KVHeads
}

// is70B mirrors llama.cpp's LLM_TYPE_70B for llama: 80 layers with GQA.
func (m *Mixer) is70B() bool { return m.hp.Layers == 80 && m.hp.Heads != m.hp.KVHeads }

func (m *Mixer) attnV(t gguf.TensorType) gguf.TensorType {
	switch m.ft.ID {
	case ftypeQ2_K:
		t = pick(m.gqa() >= 4, gguf.TypeQ4_K, gguf.TypeQ3_K)
	case ftypeQ3_KM:
		t = pick(m.iAttnV < 2, gguf.TypeQ5_K, gguf.TypeQ4_K)
	case ftypeQ3_KL:
		t = gguf.TypeQ5_K
	case ftypeQ4_KM, ftypeQ5_KM:
		if useMoreBits(m.iAttnV, m.nAttnV) {
			t = gguf.TypeQ6_K
		}
	case ftypeQ4_KS:
		if m.iAttnV < 4 {
			t = gguf.TypeQ5_K
		}
	case ftypeIQ4_NL, ftypeIQ4_XS:
		if m.gqa() >= 4 {
			t = gguf.TypeQ5_K
		}
	}
	if m.is70B() && (t == gguf.TypeQ3_K || t == gguf.TypeQ4_K) {
		t = gguf.TypeQ5_K
	}
	return t
}

func (m *Mixer) ffnDown(t gguf.TensorType) gguf.TensorType {
	i, n := m.iFFNDown, m.hp.Layers
	switch m.ft.ID {
	case ftypeQ2_K:
		t = gguf.TypeQ3_K
	case ftypeQ3_KM:
		t = pick(i < n/16, gguf.TypeQ5_K, gguf.TypeQ4_K)
	case ftypeQ3_KL:
		t = gguf.TypeQ5_K
	case ftypeQ4_KM, ftypeQ5_KM:
		if useMoreBits(i, n) {
			t = gguf.TypeQ6_K
		}
	case ftypeQ4_KS, ftypeIQ4_NL, ftypeIQ4_XS: // the IQ4 rule holds without an importance matrix
		if i < n/8 {
			t = gguf.TypeQ5_K
		}
	}
	return t
}

func (m *Mixer) attnOutput(t gguf.TensorType) gguf.TensorType {
	switch m.ft.ID {
	case ftypeQ2_K:
		return gguf.TypeQ3_K
	case ftypeQ3_KM:
		return gguf.TypeQ4_K
	case ftypeQ3_KL:
		return gguf.TypeQ5_K
	}
	return t
}

func (m *Mixer) attnQKV(t gguf.TensorType) gguf.TensorType {
	switch m.ft.ID {
	case ftypeQ3_KM, ftypeQ3_KL:
		return gguf.TypeQ4_K
	case ftypeQ4_KM:
		return gguf.TypeQ5_K
	case ftypeQ5_KM:
		return gguf.TypeQ6_K
	}
	return t
}

func pick(cond bool, a, b gguf.TensorType) gguf.TensorType {
	if cond {
		return a
	}
	return b
}

// fallback replaces a 256-wide type by a 32-wide type when a row is not a
// whole number of 256-element blocks, then by F16 if even that does not
// fit, as llama_tensor_get_type does.
func fallback(name string, nx uint64, t gguf.TensorType) (gguf.TensorType, error) {
	if nx%t.BlockSize() == 0 {
		return t, nil
	}
	switch t {
	case gguf.TypeTQ1_0, gguf.TypeTQ2_0:
		t = gguf.TypeQ4_0
	case gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeIQ4_XS, gguf.TypeIQ3_S, gguf.TypeIQ3_XXS,
		gguf.TypeIQ2_XXS, gguf.TypeIQ2_XS, gguf.TypeIQ2_S, gguf.TypeIQ1_S, gguf.TypeIQ1_M:
		t = gguf.TypeIQ4_NL
	case gguf.TypeQ4_K:
		t = gguf.TypeQ5_0
	case gguf.TypeQ5_K:
		t = gguf.TypeQ5_1
	case gguf.TypeQ6_K:
		t = gguf.TypeQ8_0
	default:
		return 0, fmt.Errorf("tensor %q: rows of %d are not whole %s blocks", name, nx, t)
	}
	if nx%t.BlockSize() != 0 {
		t = gguf.TypeF16
	}
	return t, nil
}

package model

import (
	"fmt"
	"math"

	"github.com/weft-ml/weft/gguf"
)

// KeyKind is how a hyperparameter is stored in GGUF.
type KeyKind uint8

const (
	// KeyUint is a non-negative integer of any GGUF integer type.
	KeyUint KeyKind = iota
	// KeyFloat is a float (or an integer, which llama.cpp also accepts).
	KeyFloat
)

// Key is one hyperparameter an architecture reads from "<arch>.<Name>".
// A Required key that is absent is an error naming it; an optional one
// takes Default (0 for the keys whose default derives from others, which
// readParams fills in afterwards). Set stores the value in Params.
type Key struct {
	Name     string
	Kind     KeyKind
	Required bool
	Default  float64
	Max      float64 // the largest value accepted (0: no bound beyond the type's)
	Set      func(p *Params, v float64)
}

// Limits on dimensions: far beyond any released model, small enough that
// products of two dimensions cannot overflow.
const (
	maxDim  = 1 << 24
	maxCtx  = math.MaxInt32
	maxHead = 1 << 16
)

// The keys every architecture here shares. Their defaults are llama.cpp's
// (llama_model::load_hparams at c392e5094), except context_length, which
// llama.cpp requires and weft has always defaulted to 2048.
var (
	keyContext = Key{Name: "context_length", Default: 2048, Max: maxCtx, Set: func(p *Params, v float64) { p.CtxTrain = int(v) }}
	keyEmbd    = Key{Name: "embedding_length", Required: true, Max: maxDim, Set: func(p *Params, v float64) { p.Embd = int(v) }}
	keyLayers  = Key{Name: "block_count", Required: true, Max: maxHead, Set: func(p *Params, v float64) { p.Layers = int(v) }}
	keyFFN     = Key{Name: "feed_forward_length", Required: true, Max: maxDim, Set: func(p *Params, v float64) { p.FFN = int(v) }}
	keyHeads   = Key{Name: "attention.head_count", Required: true, Max: maxHead, Set: func(p *Params, v float64) { p.Heads = int(v) }}
	// 0: as many KV heads as query heads.
	keyKVHeads = Key{Name: "attention.head_count_kv", Max: maxHead, Set: func(p *Params, v float64) { p.KVHeads = int(v) }}
	// 0: embedding_length / head_count.
	keyHeadDim = Key{Name: "attention.key_length", Max: maxDim, Set: func(p *Params, v float64) { p.HeadDim = int(v) }}
	keyValDim  = Key{Name: "attention.value_length", Max: maxDim, Set: func(p *Params, v float64) { p.valueDim = int(v) }}
	// 0: the whole head is rotated.
	keyRopeDims  = Key{Name: "rope.dimension_count", Max: maxDim, Set: func(p *Params, v float64) { p.RopeDims = int(v) }}
	keyRopeBase  = Key{Name: "rope.freq_base", Kind: KeyFloat, Default: 10000, Set: func(p *Params, v float64) { p.RopeBase = float32(v) }}
	keyRopeScale = Key{Name: "rope.scaling.factor", Kind: KeyFloat, Set: func(p *Params, v float64) { p.ropeFactor = float32(v) }}
	keyRMSEps    = Key{Name: "attention.layer_norm_rms_epsilon", Kind: KeyFloat, Default: 1e-5, Set: func(p *Params, v float64) { p.NormEps = float32(v) }}
	keyNormEps   = Key{Name: "attention.layer_norm_epsilon", Kind: KeyFloat, Default: 1e-5, Set: func(p *Params, v float64) { p.NormEps = float32(v) }}
)

// CommonKeys are the keys of a transformer with one norm kind: eps is
// keyRMSEps or keyNormEps.
func commonKeys(eps Key) []Key {
	return []Key{keyContext, keyEmbd, keyLayers, keyFFN, keyHeads, keyKVHeads, keyHeadDim, keyValDim, keyRopeDims, keyRopeBase, keyRopeScale, eps}
}

// readKey reads one key, checking its type and range.
func readKey(f *gguf.File, arch string, k Key) (float64, error) {
	name := arch + "." + k.Name
	v, ok := f.Lookup(name)
	if !ok {
		if k.Required {
			return 0, fmt.Errorf("missing hyperparameter %s", name)
		}
		return k.Default, nil
	}
	var x float64
	switch k.Kind {
	case KeyUint:
		u, ok := v.Uint64()
		if !ok {
			return 0, fmt.Errorf("hyperparameter %s is %v (%s), want a non-negative integer", name, v.V, v.Type)
		}
		x = float64(u)
	case KeyFloat:
		f, ok := v.Float64()
		if !ok {
			i, isInt := v.Int64()
			if !isInt {
				return 0, fmt.Errorf("hyperparameter %s is %v (%s), want a number", name, v.V, v.Type)
			}
			f = float64(i)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("hyperparameter %s is %v, want a finite number", name, f)
		}
		x = f
	}
	if k.Max > 0 && x > k.Max {
		return 0, fmt.Errorf("hyperparameter %s = %v is larger than %v", name, x, k.Max)
	}
	return x, nil
}

// readParams reads an architecture's keys into Params, fills in the
// derived defaults and checks that the attention shape is consistent.
func readParams(f *gguf.File, a *Arch) (Params, error) {
	p := Params{Arch: a.Name}
	for _, k := range a.Keys {
		v, err := readKey(f, a.Name, k)
		if err != nil {
			return p, err
		}
		k.Set(&p, v)
	}
	if p.Embd <= 0 || p.Layers <= 0 || p.Heads <= 0 || p.FFN <= 0 {
		return p, fmt.Errorf("missing or zero hyperparameters: embedding_length %d, block_count %d, head_count %d, feed_forward_length %d", p.Embd, p.Layers, p.Heads, p.FFN)
	}
	if p.KVHeads == 0 {
		p.KVHeads = p.Heads
	}
	if p.HeadDim == 0 {
		if p.Embd%p.Heads != 0 {
			return p, fmt.Errorf("embedding %d is not a multiple of %d heads and %s.attention.key_length is absent", p.Embd, p.Heads, a.Name)
		}
		p.HeadDim = p.Embd / p.Heads
	}
	if p.valueDim != 0 && p.valueDim != p.HeadDim {
		return p, fmt.Errorf("attention.value_length %d differs from key_length %d: not supported", p.valueDim, p.HeadDim)
	}
	if p.Heads%p.KVHeads != 0 {
		return p, fmt.Errorf("heads %d are not a multiple of kv heads %d", p.Heads, p.KVHeads)
	}
	if p.RopeDims == 0 {
		p.RopeDims = p.HeadDim
	}
	if p.RopeDims > p.HeadDim || p.RopeDims%2 != 0 {
		return p, fmt.Errorf("rope.dimension_count %d must be even and at most the head dimension %d", p.RopeDims, p.HeadDim)
	}
	if p.RopeBase <= 0 || p.NormEps <= 0 {
		return p, fmt.Errorf("rope.freq_base %v and the norm epsilon %v must be positive", p.RopeBase, p.NormEps)
	}
	if err := ropeScaling(f, a.Name, &p); err != nil {
		return p, err
	}
	if a.Check != nil {
		if err := a.Check(&p); err != nil {
			return p, err
		}
	}
	p.valueDim, p.ropeFactor = 0, 0 // checked and used: Params compare by their public fields
	return p, nil
}

// ropeScaling reads RoPE's context scaling as llama.cpp does: the
// position scale is 1/factor for linear and YaRN scaling
// (rope.scale_linear is the old key) and 1 for "none"; YaRN also mixes
// the interpolated and extrapolated angles (RopeYaRNCtx), and an
// attention factor scales cos and sin whatever the type. LongRoPE
// (Phi-3's per-pair long and short factors) is refused rather than run
// wrong.
func ropeScaling(f *gguf.File, arch string, p *Params) error {
	kind := f.String(arch+".rope.scaling.type", "linear")
	switch kind {
	case "linear", "none", "yarn":
	default:
		return fmt.Errorf("%s.rope.scaling.type %q is not supported (linear, yarn and none are)", arch, kind)
	}
	if p.ropeFactor == 0 {
		p.ropeFactor = f.Float32(arch+".rope.scale_linear", 0)
	}
	p.RopeFreqScale = 1
	if p.ropeFactor > 0 && kind != "none" {
		p.RopeFreqScale = 1 / p.ropeFactor
	}
	if af := f.Float32(arch+".rope.scaling.attn_factor", 1); !(af > 0) {
		return fmt.Errorf("%s.rope.scaling.attn_factor %v must be positive", arch, af)
	} else if af != 1 {
		p.RopeAttnFactor = af
	}
	p.ropeOrigCtx = int(min(f.Uint64(arch+".rope.scaling.original_context_length", 0), maxCtx))
	if kind == "yarn" {
		p.RopeYaRNCtx = int(min(f.Uint64(arch+".rope.scaling.original_context_length", uint64(p.CtxTrain)), maxDim+1))
		if p.RopeYaRNCtx <= 0 || p.RopeYaRNCtx > maxDim {
			return fmt.Errorf("%s.rope.scaling.original_context_length %d: want a positive context length", arch, p.RopeYaRNCtx)
		}
	}
	return nil
}

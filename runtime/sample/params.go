package sample

import (
	"fmt"
	"math"
)

// Params configures a Sampler. Zero TopK, TopP 1, MinP 0 and RepeatLastN 0
// switch the matching stage off; RepeatPenalty 1 with zero presence and
// frequency penalties switches penalties off.
type Params struct {
	Temp             float32 // 0 = greedy argmax
	TopK             int     // 0 = whole vocabulary
	TopP, MinP       float32 // both in [0, 1]
	RepeatPenalty    float32 // > 0; 1 (or 0) = off
	RepeatLastN      int     // tokens of history penalized; 0 = off
	PresencePenalty  float32 // subtracted once from every token seen
	FrequencyPenalty float32 // subtracted once per occurrence
	Seed             uint64
}

// DefaultParams returns llama.cpp's defaults. Seed is 0: callers wanting a
// fresh stream on every run pick their own seed.
func DefaultParams() Params {
	return Params{
		Temp:          0.8,
		TopK:          40,
		TopP:          0.95,
		MinP:          0.05,
		RepeatPenalty: 1,
		RepeatLastN:   64,
	}
}

// maxVocab bounds the scratch buffers New allocates for hostile sizes.
const maxVocab = 1 << 24

func (p Params) validate(vocabSize int) error {
	switch {
	case vocabSize <= 0 || vocabSize > maxVocab:
		return fmt.Errorf("sample: vocabulary size %d outside [1, %d]", vocabSize, maxVocab)
	case !finite(p.Temp) || p.Temp < 0:
		return fmt.Errorf("sample: temperature %g must be finite and >= 0", p.Temp)
	case p.TopK < 0:
		return fmt.Errorf("sample: top-k %d must be >= 0 (0 disables it)", p.TopK)
	case !unitInterval(p.TopP):
		return fmt.Errorf("sample: top-p %g outside [0, 1]", p.TopP)
	case !unitInterval(p.MinP):
		return fmt.Errorf("sample: min-p %g outside [0, 1]", p.MinP)
	case !finite(p.RepeatPenalty) || p.RepeatPenalty <= 0:
		return fmt.Errorf("sample: repeat penalty %g must be finite and > 0", p.RepeatPenalty)
	case p.RepeatLastN < 0:
		return fmt.Errorf("sample: repeat-last-n %d must be >= 0 (map -1 to the context size first)", p.RepeatLastN)
	case !finite(p.PresencePenalty) || !finite(p.FrequencyPenalty):
		return fmt.Errorf("sample: presence %g and frequency %g penalties must be finite",
			p.PresencePenalty, p.FrequencyPenalty)
	}
	return nil
}

// penalized reports whether the penalty stage changes any logit.
func (p Params) penalized() bool {
	return p.RepeatLastN > 0 &&
		(p.RepeatPenalty != 1 || p.PresencePenalty != 0 || p.FrequencyPenalty != 0)
}

func finite(x float32) bool {
	return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0)
}

func unitInterval(x float32) bool { return x >= 0 && x <= 1 } // false for NaN

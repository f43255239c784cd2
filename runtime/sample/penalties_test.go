package sample

import (
	"math"
	"slices"
	"testing"
)

// naivePenalized recomputes the penalized logits from the whole history:
// counts over its last RepeatLastN entries, formula applied per token.
func naivePenalized(logits []float32, history []int32, p Params) []float32 {
	out := slices.Clone(logits)
	if p.RepeatLastN == 0 {
		return out
	}
	window := history[max(0, len(history)-p.RepeatLastN):]
	counts := map[int32]int{}
	for _, id := range window {
		counts[id]++
	}
	for id, n := range counts {
		l := out[id]
		if l > 0 {
			l /= p.RepeatPenalty
		} else {
			l *= p.RepeatPenalty
		}
		out[id] = l - float32(n)*p.FrequencyPenalty - p.PresencePenalty
	}
	return out
}

func loaded(s *Sampler, logits []float32) []float32 {
	c := s.load(logits)
	out := make([]float32, len(c))
	for i, x := range c {
		out[i] = x.logit
	}
	return out
}

func TestPenaltiesHandMade(t *testing.T) {
	p := Params{TopP: 1, RepeatPenalty: 2, RepeatLastN: 64, FrequencyPenalty: 0.5, PresencePenalty: 0.25}
	s := mustNew(t, p, 4)
	for _, id := range []int32{0, 1, 0} {
		s.Accept(id)
	}
	logits := []float32{2, -2, 1, 0.5}
	// token 0: 2/2 - 2*0.5 - 0.25; token 1: -2*2 - 0.5 - 0.25.
	want := []float32{-0.25, -4.75, 1, 0.5}
	if got := loaded(s, logits); !slices.Equal(got, want) {
		t.Fatalf("penalized %v, want %v", got, want)
	}
	if !slices.Equal(logits, []float32{2, -2, 1, 0.5}) {
		t.Fatalf("input logits modified: %v", logits)
	}
}

func TestPenaltyWindowSlides(t *testing.T) {
	p := Params{TopP: 1, RepeatPenalty: 2, RepeatLastN: 2}
	s := mustNew(t, p, 3)
	for _, id := range []int32{0, 1, 2} {
		s.Accept(id)
	}
	want := []float32{4, 2, 2} // token 0 has left the window
	if got := loaded(s, []float32{4, 4, 4}); !slices.Equal(got, want) {
		t.Fatalf("penalized %v, want %v", got, want)
	}
	s.Reset()
	if got := loaded(s, []float32{4, 4, 4}); !slices.Equal(got, []float32{4, 4, 4}) {
		t.Fatalf("after Reset %v, want no penalty", got)
	}
}

func TestPenaltiesMatchNaive(t *testing.T) {
	r := freshRand(t)
	const vocab = 60
	for trial := 0; trial < 20; trial++ {
		p := Params{
			TopP:             1,
			RepeatPenalty:    0.5 + 2*r.Float32(),
			RepeatLastN:      1 + r.IntN(80),
			FrequencyPenalty: r.Float32() - 0.3,
			PresencePenalty:  r.Float32() - 0.3,
		}
		s := mustNew(t, p, vocab)
		logits := randomLogits(r, vocab, -5, 5)
		var history []int32
		for step := 0; step < 200; step++ {
			id := int32(r.IntN(vocab / 3)) // a small range repeats often
			s.Accept(id)
			history = append(history, id)
			if step%17 != 0 {
				continue
			}
			want := naivePenalized(logits, history, p)
			got := loaded(s, logits)
			for i := range want {
				if math.Abs(float64(got[i]-want[i])) > 1e-5*(1+math.Abs(float64(want[i]))) {
					t.Fatalf("trial %d step %d token %d: got %g, want %g (%+v)",
						trial, step, i, got[i], want[i], p)
				}
			}
		}
	}
}

func TestAcceptIgnoresOutOfRange(t *testing.T) {
	s := mustNew(t, Params{TopP: 1, RepeatPenalty: 2, RepeatLastN: 4}, 3)
	for _, id := range []int32{-1, 3, 1 << 30} {
		s.Accept(id)
	}
	if got := loaded(s, []float32{1, 1, 1}); !slices.Equal(got, []float32{1, 1, 1}) {
		t.Fatalf("out-of-range ids penalized something: %v", got)
	}
	// Logits longer than the vocabulary: extra tokens sampled, not penalized.
	s.Accept(2)
	if got := loaded(s, []float32{1, 1, 1, 1}); !slices.Equal(got, []float32{1, 1, 0.5, 1}) {
		t.Fatalf("long logits: %v", got)
	}
}

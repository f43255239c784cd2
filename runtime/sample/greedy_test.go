package sample

import (
	"math"
	"testing"
)

func TestGreedyTies(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := []struct {
		name   string
		logits []float32
		want   int32
	}{
		{"empty", nil, -1},
		{"single", []float32{-3}, 0},
		{"tie in middle", []float32{1, 3, 3, 2}, 1},
		{"tie at ends", []float32{7, 1, 7}, 0},
		{"all equal", []float32{-1, -1, -1}, 0},
		{"nan first", []float32{nan, 2, 5, 5}, 2},
		{"all nan", []float32{nan, nan}, 0},
		{"infinities", []float32{1, inf, inf}, 1},
	}
	for _, c := range cases {
		if got := Greedy(c.logits); got != c.want {
			t.Errorf("%s: Greedy(%v) = %d, want %d", c.name, c.logits, got, c.want)
		}
	}
}

func TestGreedyMatchesNaive(t *testing.T) {
	r := freshRand(t)
	for trial := 0; trial < 50; trial++ {
		logits := randomLogits(r, 1+r.IntN(3000), -20, 20)
		// Plant copies of a new maximum to exercise ties.
		top := float32(25 + r.IntN(3))
		for range 1 + r.IntN(3) {
			logits[r.IntN(len(logits))] = top
		}
		want := int32(-1)
		var best float32
		for i, l := range logits {
			if want < 0 || l > best {
				want, best = int32(i), l
			}
		}
		if got := Greedy(logits); got != want {
			t.Fatalf("trial %d: Greedy = %d, want %d", trial, got, want)
		}
	}
}

// Temp 0 is the argmax after penalties, as in llama.cpp's chain.
func TestTempZeroIsPenalizedArgmax(t *testing.T) {
	r := freshRand(t)
	p := DefaultParams()
	p.Temp, p.RepeatPenalty = 0, 1.5+r.Float32()
	logits := randomLogits(r, 500, 0.5, 4)
	s := mustNew(t, p, len(logits))
	var history []int32
	for step := 0; step < 100; step++ {
		want := Greedy(naivePenalized(logits, history, p))
		got := s.Sample(logits)
		if got != want {
			t.Fatalf("step %d: got %d, want %d", step, got, want)
		}
		s.Accept(got)
		history = append(history, got)
	}
	// After accepting the argmax it must lose to the runner-up when the
	// penalty pushes it below.
	logits = []float32{3, 2.5, 1}
	s = mustNew(t, Params{TopP: 1, RepeatPenalty: 2, RepeatLastN: 8}, 3)
	if got := s.Sample(logits); got != 0 {
		t.Fatalf("before penalty got %d, want 0", got)
	}
	s.Accept(0)
	if got := s.Sample(logits); got != 1 {
		t.Fatalf("after penalty got %d, want 1 (3/2 < 2.5)", got)
	}
}

func TestSampleGreedyTies(t *testing.T) {
	p := DefaultParams()
	p.Temp = 0
	s := mustNew(t, p, 6)
	for _, c := range []struct {
		logits []float32
		want   int32
	}{
		{[]float32{1, 3, 3, 2}, 1},
		{[]float32{5, 0, 5, 5, 1, 5}, 0},
		{[]float32{-2, -1, -1}, 1},
	} {
		if got := s.Sample(c.logits); got != c.want {
			t.Errorf("Sample(%v) at temp 0 = %d, want %d", c.logits, got, c.want)
		}
	}
}

package sample

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestDefaultParams(t *testing.T) {
	want := Params{Temp: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1, RepeatLastN: 64}
	if got := DefaultParams(); got != want {
		t.Fatalf("DefaultParams() = %+v, want %+v", got, want)
	}
	if _, err := New(DefaultParams(), 32000); err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
}

func TestInvalidParams(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	edit := func(f func(*Params)) Params { p := DefaultParams(); f(&p); return p }
	cases := []struct {
		name  string
		p     Params
		vocab int
		want  string
	}{
		{"zero vocab", DefaultParams(), 0, "vocabulary"},
		{"huge vocab", DefaultParams(), 1 << 30, "vocabulary"},
		{"negative temp", edit(func(p *Params) { p.Temp = -0.1 }), 10, "temperature"},
		{"nan temp", edit(func(p *Params) { p.Temp = nan }), 10, "temperature"},
		{"inf temp", edit(func(p *Params) { p.Temp = inf }), 10, "temperature"},
		{"negative top-k", edit(func(p *Params) { p.TopK = -1 }), 10, "top-k"},
		{"top-p above 1", edit(func(p *Params) { p.TopP = 1.01 }), 10, "top-p"},
		{"top-p below 0", edit(func(p *Params) { p.TopP = -0.01 }), 10, "top-p"},
		{"nan top-p", edit(func(p *Params) { p.TopP = nan }), 10, "top-p"},
		{"min-p above 1", edit(func(p *Params) { p.MinP = 2 }), 10, "min-p"},
		{"nan min-p", edit(func(p *Params) { p.MinP = nan }), 10, "min-p"},
		{"negative repeat penalty", edit(func(p *Params) { p.RepeatPenalty = -1 }), 10, "repeat penalty"},
		{"negative last-n", edit(func(p *Params) { p.RepeatLastN = -1 }), 10, "repeat-last-n"},
		{"inf presence", edit(func(p *Params) { p.PresencePenalty = inf }), 10, "presence"},
		{"nan frequency", edit(func(p *Params) { p.FrequencyPenalty = nan }), 10, "frequency"},
	}
	for _, c := range cases {
		s, err := New(c.p, c.vocab)
		if err == nil || s != nil {
			t.Errorf("%s: New accepted %+v", c.name, c.p)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.want)
		}
	}
}

// run samples steps tokens, accepting each, from logits that drift per step.
func run(s *Sampler, logits []float32, steps int) []int32 {
	out := make([]int32, steps)
	row := slices.Clone(logits)
	for i := range out {
		out[i] = s.Sample(row)
		s.Accept(out[i])
		row[(i*7919)%len(row)] += 0.5
	}
	return out
}

func TestSeededDeterminism(t *testing.T) {
	r := freshRand(t)
	p := DefaultParams()
	p.Temp, p.TopK, p.RepeatPenalty, p.Seed = 1.2, 200, 1.1, r.Uint64()
	logits := randomLogits(r, 4000, -3, 3)
	a, b := mustNew(t, p, 4000), mustNew(t, p, 4000)
	first := run(a, logits, 300)
	if second := run(b, logits, 300); !slices.Equal(first, second) {
		t.Fatal("two samplers with the same seed disagree")
	}
	a.Reset()
	if again := run(a, logits, 300); !slices.Equal(first, again) {
		t.Fatal("Reset does not replay the same tokens")
	}
	p.Seed++
	if other := run(mustNew(t, p, 4000), logits, 300); slices.Equal(first, other) {
		t.Fatal("a different seed gave the very same 300 tokens")
	}
}

func TestSampleDoesNotModifyLogits(t *testing.T) {
	r := freshRand(t)
	p := DefaultParams()
	p.RepeatPenalty, p.FrequencyPenalty = 1.3, 0.2
	logits := randomLogits(r, 1000, -6, 6)
	keep := slices.Clone(logits)
	s := mustNew(t, p, len(logits))
	for i := range 50 {
		s.Accept(int32(i))
		if id := s.Sample(logits); id < 0 || int(id) >= len(logits) {
			t.Fatalf("id %d out of range", id)
		}
	}
	if !slices.Equal(logits, keep) {
		t.Fatal("Sample modified its input")
	}
}

func TestSampleEdgeCases(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	s := mustNew(t, DefaultParams(), 4)
	cases := []struct {
		name   string
		logits []float32
		ok     func(int32) bool
	}{
		{"empty", nil, func(id int32) bool { return id == -1 }},
		{"single", []float32{0.3}, func(id int32) bool { return id == 0 }},
		{"all nan", []float32{nan, nan, nan}, func(id int32) bool { return id >= 0 && id < 3 }},
		{"nan and one number", []float32{nan, -50, nan}, func(id int32) bool { return id == 1 }},
		{"plus infinity", []float32{1, inf, 2, 3}, func(id int32) bool { return id == 1 }},
		{"minus infinity", []float32{-inf, 0, -inf}, func(id int32) bool { return id == 1 }},
		{"longer than vocab", []float32{0, 0, 0, 0, 0, 40}, func(id int32) bool { return id == 5 }},
	}
	for _, c := range cases {
		for range 20 {
			if id := s.Sample(c.logits); !c.ok(id) {
				t.Fatalf("%s: got %d", c.name, id)
			}
		}
	}
}

func TestNoAllocationAfterWarmup(t *testing.T) {
	r := freshRand(t)
	logits := randomLogits(r, 32000, -10, 10)
	for _, c := range []struct {
		name string
		edit func(*Params)
	}{
		{"defaults with penalties", func(p *Params) { p.RepeatPenalty, p.PresencePenalty = 1.1, 0.3 }},
		{"full sort (top-k off)", func(p *Params) { p.TopK = 0 }},
		{"greedy", func(p *Params) { p.Temp = 0 }},
	} {
		p := DefaultParams()
		c.edit(&p)
		s := mustNew(t, p, len(logits))
		for i := range 100 {
			s.Accept(int32(i * 13))
		}
		s.Sample(logits)
		if n := testing.AllocsPerRun(20, func() { s.Sample(logits) }); n != 0 {
			t.Errorf("%s: %v allocations per Sample", c.name, n)
		}
	}
}

func TestZeroParamsIsGreedy(t *testing.T) {
	s, err := New(Params{}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Sample([]float32{0.1, 3, -1, 2.9}); got != 1 {
		t.Fatalf("zero Params sampled %d, want the argmax 1", got)
	}
}

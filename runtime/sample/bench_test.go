package sample

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// BenchmarkSample times one Sample at llama (32000) and qwen2 (151936)
// vocabulary sizes. With top-k off, top-p must rank the whole row: "topk-off"
// is a flat uniform row (the worst case, a full sort), "topk-off-peaked" a
// row whose top-p prefix is short.
func BenchmarkSample(b *testing.B) {
	for _, vocab := range []int{32000, 151936} {
		r := freshRand(b)
		logits := randomLogits(r, vocab, -12, 12)
		// A peaked row, as trained models mostly give: 20 tokens hold
		// about 98% of the mass.
		peaked := slices.Clone(logits)
		for range 20 {
			peaked[r.IntN(vocab)] = 22
		}
		for _, c := range []struct {
			name string
			edit func(*Params)
		}{
			{"defaults", func(*Params) {}},
			{"penalties", func(p *Params) { p.RepeatPenalty, p.FrequencyPenalty = 1.1, 0.1 }},
			{"topk-off", func(p *Params) { p.TopK = 0 }},
			{"topk-off-peaked", func(p *Params) { p.TopK = 0 }},
			{"greedy", func(p *Params) { p.Temp = 0 }},
		} {
			p := DefaultParams()
			c.edit(&p)
			s := mustNew(b, p, vocab)
			for i := range 64 {
				s.Accept(int32(i * 31))
			}
			row := logits
			if strings.HasSuffix(c.name, "peaked") {
				row = peaked
			}
			b.Run(fmt.Sprintf("vocab=%d/%s", vocab, c.name), func(b *testing.B) {
				for b.Loop() {
					s.Sample(row)
				}
			})
		}
	}
}

func BenchmarkGreedy(b *testing.B) {
	logits := randomLogits(freshRand(b), 151936, -12, 12)
	for b.Loop() {
		Greedy(logits)
	}
}

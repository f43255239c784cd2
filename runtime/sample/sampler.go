package sample

import (
	"math"
	"math/rand/v2"
)

// pcgStream is the second PCG seed word; any fixed value will do,
// it only has to stay the same so that a seed reproduces.
const pcgStream = 0x9e3779b97f4a7c15

// Sampler picks tokens from logits with a fixed Params. It remembers the
// accepted tokens for the penalties and owns its random stream.
type Sampler struct {
	p     Params
	cand  []candidate // scratch: the running candidates of one Sample
	count []int32     // occurrences of each token id in history
	hist  []int32     // ring of the last RepeatLastN accepted ids
	next  int         // ring slot to overwrite once hist is full
	pcg   *rand.PCG
	rng   *rand.Rand
}

// New validates p and returns a Sampler for a vocabulary of vocabSize tokens.
//
// A zero RepeatPenalty means "off" (as 1 does), so that the zero Params is
// plain greedy decoding.
func New(p Params, vocabSize int) (*Sampler, error) {
	if p.RepeatPenalty == 0 {
		p.RepeatPenalty = 1
	}
	if err := p.validate(vocabSize); err != nil {
		return nil, err
	}
	pcg := rand.NewPCG(p.Seed, pcgStream)
	return &Sampler{
		p:     p,
		cand:  make([]candidate, 0, vocabSize),
		count: make([]int32, vocabSize),
		pcg:   pcg,
		rng:   rand.New(pcg),
	}, nil
}

// Params returns the parameters the Sampler was built with.
func (s *Sampler) Params() Params { return s.p }

// Sample returns the next token id drawn from logits, or -1 when logits is
// empty. It does not modify logits. NaN logits count as -Inf; tokens beyond
// the vocabulary size given to New are sampled but never penalized.
func (s *Sampler) Sample(logits []float32) int32 {
	if len(logits) == 0 {
		return -1
	}
	c := s.load(logits)
	if s.p.Temp == 0 {
		return argmax(c)
	}
	return s.draw(s.truncate(c))
}

// Accept records a token, from the prompt or generated, for the penalties.
// Ids outside the vocabulary are ignored.
func (s *Sampler) Accept(id int32) {
	n := s.p.RepeatLastN
	if n == 0 || id < 0 || int(id) >= len(s.count) {
		return
	}
	if len(s.hist) < n {
		s.hist = append(s.hist, id)
	} else {
		s.count[s.hist[s.next]]--
		s.hist[s.next] = id
		s.next = (s.next + 1) % n
	}
	s.count[id]++
}

// Reset forgets the accepted tokens and restarts the random stream from the
// seed, so the Sampler behaves as if just built.
func (s *Sampler) Reset() {
	for _, id := range s.hist {
		s.count[id] = 0
	}
	s.hist = s.hist[:0]
	s.next = 0
	s.pcg.Seed(s.p.Seed, pcgStream)
}

// load copies logits into the candidate scratch, in id order, and applies
// the penalties.
func (s *Sampler) load(logits []float32) []candidate {
	c := s.cand[:0]
	for i, l := range logits {
		if l != l { // NaN
			l = float32(math.Inf(-1))
		}
		c = append(c, candidate{id: int32(i), logit: l})
	}
	s.cand = c
	if s.p.penalized() {
		s.applyPenalties(c)
	}
	return c
}

// applyPenalties penalizes each distinct token of the history once. A count
// is negated while its token is done, marking it without another array.
func (s *Sampler) applyPenalties(c []candidate) {
	for _, id := range s.hist {
		if n := s.count[id]; n > 0 {
			if int(id) < len(c) {
				c[id].logit = penalize(c[id].logit, n, &s.p)
			}
			s.count[id] = -n
		}
	}
	for _, id := range s.hist {
		if n := s.count[id]; n < 0 {
			s.count[id] = -n
		}
	}
}

// truncate runs top-k, top-p and min-p in llama.cpp's order.
func (s *Sampler) truncate(c []candidate) []candidate {
	sorted := false
	if k := s.p.TopK; k > 0 && k < len(c) {
		c, sorted = selectTopK(c, k), true
	}
	if s.p.TopP < 1 {
		if sorted {
			c = topP(c, s.p.TopP)
		} else {
			c, sorted = topPUnsorted(c, s.p.TopP), true
		}
	}
	return minP(c, s.p.MinP, sorted)
}

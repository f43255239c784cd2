package runtime

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

// BenchOptions configure Bench, mirroring llama-bench's -p, -n and -r.
type BenchOptions struct {
	PromptTokens int // prefill batch size to time (llama-bench -p); 0 skips prefill
	GenTokens    int // tokens to decode one at a time (-n); 0 skips decode
	// Depth is how many tokens are already in the KV cache when each
	// prefill or decode run starts (llama-bench's -d): they are evaluated
	// once, untimed, and every run continues from them.
	Depth    int
	Reps     int // timed repetitions after one warm-up run
	Progress func(stage string, rep, reps int)
	// KVType and FlashAttn are the session's (SessionOptions): benchmarks
	// of the long-context settings, as llama-bench's -ctk/-ctv and -fa.
	KVType    string
	FlashAttn bool
	FlashAcc  string // SessionOptions.FlashAcc
	// Profile times every node of the timed runs (warm-up runs and the
	// depth fill left out) into BenchResult.Profile (Session.Profile).
	Profile bool
	timed   func() error // called before the first timed run of a stage
}

// Stat summarises repeated throughput measurements in tokens per second.
type Stat struct {
	Median float64   `json:"median"`
	P95    float64   `json:"p95"`
	CV     float64   `json:"cv"` // coefficient of variation (stddev / mean)
	Runs   []float64 `json:"runs"`
}

// BenchResult holds prefill and decode throughput.
type BenchResult struct {
	Prefill *Stat `json:"prefill_tok_s,omitempty"`
	Decode  *Stat `json:"decode_tok_s,omitempty"`
	// Profile is the timed runs' per-node profile (BenchOptions.Profile).
	Profile *Profile `json:"profile,omitempty"`
}

// Bench times prefill of PromptTokens random tokens (one batch, like
// llama-bench's pp test) and decode of GenTokens tokens (tg test), each
// after a warm-up run, on an empty cache or, with Depth, after Depth
// tokens: like llama-bench's -d, those are evaluated once (untimed) and
// every run starts from them (Session.Truncate), so attention reads a
// cache of that length. Token ids are random: speed does not depend on
// them.
func (m *Model) Bench(o BenchOptions) (*BenchResult, error) {
	return m.BenchContext(context.Background(), o)
}

// BenchContext is Bench that stops once ctx is done: between runs, and
// between decoded tokens (a prefill run is one batch and is not cut
// short). It then returns the statistics of the runs that completed (nil
// where none did) with an error wrapping ctx.Err().
func (m *Model) BenchContext(ctx context.Context, o BenchOptions) (*BenchResult, error) {
	if o.Reps < 1 {
		o.Reps = 1
	}
	if o.Depth < 0 {
		return nil, fmt.Errorf("bench depth %d: want 0 or more tokens", o.Depth)
	}
	s, err := m.NewSession(SessionOptions{Ctx: o.Depth + max(o.PromptTokens, o.GenTokens) + 1, KVType: o.KVType, FlashAttn: o.FlashAttn, FlashAcc: o.FlashAcc})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	// With a profile, each stage restarts it after its warm-up run and
	// takes its own batch size's phase at the end.
	var phases []ProfilePhase
	if o.Profile {
		if err := s.StartProfile(); err != nil {
			return nil, err
		}
		o.timed = func() error { return s.StartProfile() }
	}
	took := func(tokens int) error {
		if !o.Profile {
			return nil
		}
		p, err := s.Profile()
		if err != nil {
			return err
		}
		if ph, err := p.Phase(phaseName(tokens)); err == nil {
			// A 1-token prefill is decode's shape: decode's runs replace it.
			phases = slices.DeleteFunc(phases, func(q ProfilePhase) bool { return q.Tokens == tokens })
			phases = append(phases, *ph)
		}
		return nil
	}
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := func(n int) []int32 {
		t := make([]int32, n)
		for i := range t {
			t[i] = int32(rng.IntN(m.VocabSize()))
		}
		return t
	}
	res := &BenchResult{}
	if o.Depth > 0 {
		if o.Progress != nil {
			o.Progress("depth", 0, 0)
		}
		if _, err := s.EvalContext(ctx, tokens(o.Depth), false); err != nil {
			return res, fmt.Errorf("filling the cache to depth %d: %w", o.Depth, err)
		}
	}
	if o.PromptTokens > 0 {
		prompt := tokens(o.PromptTokens)
		res.Prefill, err = repeat(ctx, o, "prefill", o.PromptTokens, func() error {
			if err := s.Truncate(o.Depth); err != nil {
				return err
			}
			_, err := s.Eval(prompt, false)
			return err
		})
		if err != nil {
			return res, err
		}
		if err := took(o.PromptTokens); err != nil {
			return res, err
		}
	}
	if o.GenTokens > 0 {
		gen := tokens(o.GenTokens)
		res.Decode, err = repeat(ctx, o, "decode", o.GenTokens, func() error {
			if err := s.Truncate(o.Depth); err != nil {
				return err
			}
			if err := s.claim(); err != nil {
				return err
			}
			defer s.unclaim()
			for _, t := range gen {
				if err := ctx.Err(); err != nil {
					return err
				}
				// Generate's step: the backend's logits, not a copy the
				// caller owns (Eval's), as llama-bench's decode reads them.
				if _, err := s.step(t); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			err = took(1)
		}
	}
	if o.Profile && err == nil {
		res.Profile = s.m.newProfile(nil, nil, s.kvType)
		slices.SortFunc(phases, func(a, b ProfilePhase) int { return a.Tokens - b.Tokens }) // decode first, as Session.Profile
		res.Profile.Phases = phases
	}
	return res, err
}

// repeat runs fn once to warm up, then o.Reps timed times, stopping early
// when ctx is done (returning the completed runs' statistics, if any).
func repeat(ctx context.Context, o BenchOptions, stage string, tokens int, fn func() error) (*Stat, error) {
	var runs []float64
	for rep := 0; rep <= o.Reps; rep++ {
		err := ctx.Err()
		if err == nil {
			if o.Progress != nil {
				o.Progress(stage, rep, o.Reps)
			}
			if rep == 1 && o.timed != nil {
				err = o.timed()
			}
		}
		if err == nil {
			start := time.Now()
			if err = fn(); err == nil && rep > 0 {
				runs = append(runs, float64(tokens)/time.Since(start).Seconds())
			}
		}
		if err != nil {
			var st *Stat
			if ctx.Err() != nil && len(runs) > 0 {
				st = SummarizeRuns(runs)
			}
			return st, fmt.Errorf("%s: %w", stage, err)
		}
	}
	return SummarizeRuns(runs), nil
}

// SummarizeRuns computes the median, p95 and coefficient of variation of
// throughput runs (tokens/s); runs must not be empty.
func SummarizeRuns(runs []float64) *Stat {
	sorted := append([]float64(nil), runs...)
	sort.Float64s(sorted)
	n := len(sorted)
	median := sorted[n/2]
	if n%2 == 0 {
		median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	var mean, sq float64
	for _, r := range runs {
		mean += r / float64(n)
	}
	for _, r := range runs {
		sq += (r - mean) * (r - mean)
	}
	// p95 of throughput: the rate 95% of runs reach or beat (a low percentile).
	p95 := sorted[int(math.Floor(0.05*float64(n-1)))]
	return &Stat{Median: median, P95: p95, CV: math.Sqrt(sq/float64(n)) / mean, Runs: runs}
}

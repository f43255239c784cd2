package runtime

import (
	"math"
	"testing"
)

func TestSummarizeRuns(t *testing.T) {
	s := SummarizeRuns([]float64{10, 12, 11, 13})
	if s.Median != 11.5 || s.P95 != 10 || math.Abs(s.CV-0.0968) > 1e-3 {
		t.Fatalf("%+v", s)
	}
}

func TestBenchRuns(t *testing.T) {
	m := openStories(t)
	res, err := m.Bench(BenchOptions{PromptTokens: 16, GenTokens: 4, Reps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Prefill == nil || len(res.Prefill.Runs) != 2 || res.Decode.Median <= 0 {
		t.Fatalf("%+v", res)
	}
}

package runtime

import (
	"testing"

	"github.com/weft-ml/weft/runtime/sample"
)

// TestDecodeLoopAllocatesNothing runs the decode hot path, Step then
// Sample, and requires zero allocations per token after warm-up.
func TestDecodeLoopAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector; the plain test run checks this")
	}
	m := openStories(t)
	s, err := m.NewSession(SessionOptions{Ctx: 512})
	if err != nil {
		t.Fatal(err)
	}
	smp, err := sample.New(sample.DefaultParams(), m.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	logits, err := s.Eval([]int32{1, 403, 407}, false)
	if err != nil {
		t.Fatal(err)
	}
	id := smp.Sample(logits)
	step := func() {
		logits, err := s.Step(id)
		if err != nil {
			t.Fatal(err)
		}
		id = smp.Sample(logits)
		smp.Accept(id)
	}
	for range 3 {
		step() // warm-up: lazily sized scratch
	}
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Fatalf("%.1f allocations per decoded token, want 0", n)
	}
}

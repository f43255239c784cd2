package runtime

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// BenchmarkBatcherDecode measures aggregate decode throughput with 1, 2,
// 4 and 8 sequences decoding together, one token each per step, after a
// 32-token prompt each. WEFT_BENCH_MODEL names the model (default
// stories260K); for the server's target use the TinyLlama-shaped Q4_0
// model (graphc synth, see make bench), e.g.
//
//	WEFT_BENCH_MODEL=out/bench/tinyllama-1.1b-q4_0.gguf go test -run '^$' -bench BatcherDecode -benchtime 32x ./runtime
//
// "tok/s" is every sequence's tokens together; "session" is a plain
// Session's decode for comparison. WEFT_BENCH_BACKEND=vulkan runs it on
// the GPU.
func BenchmarkBatcherDecode(b *testing.B) {
	path := os.Getenv("WEFT_BENCH_MODEL")
	if path == "" {
		path = stories(b)
	} else if !os.IsPathSeparator(path[0]) {
		path = "../" + path // tests run in the package's folder
	}
	be := os.Getenv("WEFT_BENCH_BACKEND")
	m, err := Open(path, Options{Backend: be, Compile: CompileOptions{Backend: be}})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	const prompt, ctx = 32, 512
	b.Run("session", func(b *testing.B) {
		s, err := m.NewSession(SessionOptions{Ctx: ctx})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Eval(make([]int32, prompt), false); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			if s.Pos() == ctx {
				s.truncate(prompt)
			}
			if _, err := s.Step(1); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tok/s")
	})
	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("seqs=%d", n), func(b *testing.B) { benchDecode(b, m, n, prompt, ctx) })
	}
}

// benchDecode runs b.N steps of n sequences decoding one token each.
func benchDecode(b *testing.B, m *Model, n, prompt, ctx int) {
	bt, err := m.NewBatcher(BatcherOptions{Slots: n, SlotCtx: ctx})
	if err != nil {
		b.Fatal(err)
	}
	defer bt.Close()
	bg := context.Background()
	in := make([]SeqInput, n)
	for i := range in {
		in[i] = SeqInput{Slot: i, Tokens: make([]int32, prompt), Logits: true}
	}
	if _, err := bt.Step(bg, in); err != nil {
		b.Fatal(err)
	}
	for i := range in {
		in[i].Tokens = []int32{1}
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if len(bt.History(0)) == ctx {
			for i := range n {
				if err := bt.Truncate(i, prompt); err != nil {
					b.Fatal(err)
				}
			}
		}
		if _, err := bt.Step(bg, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "tok/s")
}

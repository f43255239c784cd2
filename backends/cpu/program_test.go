package cpu

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/model"
)

func compileStories(t *testing.T, maxTokens int) *Program {
	t.Helper()
	f, err := gguf.Open(filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	l, err := model.Lower(f)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(l.Graph, f, Options{MaxTokens: maxTokens, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func seq(lo, n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(lo + i)
	}
	return s
}

// TestBatchEqualsTokenByToken runs a prompt as one batch and one token at a
// time: the last logits must agree, which exercises buffer reuse, the KV
// cache and the threaded attention split.
func TestBatchEqualsTokenByToken(t *testing.T) {
	p := compileStories(t, 32)
	tokens := []int32{1, 403, 407, 261, 378, 30, 99, 12, 7, 250, 111, 42}
	batch, _ := p.NewState(64, KVF32)
	want, err := batch.Run(tokens, seq(0, len(tokens)), []int32{int32(len(tokens) - 1)})
	if err != nil {
		t.Fatal(err)
	}
	want = append([]float32(nil), want...)
	single, _ := p.NewState(64, KVF32)
	var got []float32
	for i, tok := range tokens {
		if got, err = single.Run([]int32{tok}, seq(i, 1), []int32{0}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-5 {
			t.Fatalf("logit %d: token-by-token %g, batch %g", i, got[i], want[i])
		}
	}
}

func TestSlotsAreReused(t *testing.T) {
	p := compileStories(t, 16)
	var naive int64
	for _, v := range p.vals {
		if v.run != nil {
			naive += int64(v.elems) * 4
		}
	}
	t.Logf("arena %d bytes, naive %d bytes", p.ActivationBytes(), naive)
	if got := p.ActivationBytes(); got*4 >= naive {
		t.Fatalf("arena %d bytes against %d bytes without reuse: buffers are not being reused", got, naive)
	}
}

func TestRunRejectsBadBatches(t *testing.T) {
	p := compileStories(t, 8)
	s, _ := p.NewState(16, KVF16)
	cases := []struct {
		tokens, pos, rows []int32
		want              string
	}{
		{nil, nil, nil, "empty batch"},
		{seq(1, 9), seq(0, 9), []int32{0}, "exceeds the compiled maximum"},
		{[]int32{1, 2}, []int32{0, 2}, []int32{1}, "consecutive"},
		{[]int32{1, 2}, []int32{15, 16}, []int32{1}, "context overflow"},
		{[]int32{1, 2}, seq(0, 2), []int32{2}, "outside the batch"},
		{[]int32{1, 600}, seq(0, 2), []int32{1}, "outside the vocabulary"},
	}
	for _, c := range cases {
		if _, err := s.Run(c.tokens, c.pos, c.rows); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("tokens %v pos %v rows %v: got %v, want %q", c.tokens, c.pos, c.rows, err, c.want)
		}
	}
}

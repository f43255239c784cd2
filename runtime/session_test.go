package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/runtime/sample"
)

func stories(t testing.TB) string {
	return filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf")
}

func openStories(t *testing.T) *Model {
	t.Helper()
	m, err := Open(stories(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func greedy(n int) GenerateOptions {
	return GenerateOptions{MaxTokens: n, IgnoreEOS: true, Sampling: sample.Params{Temp: 0}}
}

func TestGenerateErrors(t *testing.T) {
	m := openStories(t)
	s, err := m.NewSession(SessionOptions{Ctx: 16})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Generate(ctx, "", GenerateOptions{NoBOS: true}, nil); err == nil || !strings.Contains(err.Error(), "empty prompt") {
		t.Errorf("empty prompt without BOS: got %v", err)
	}
	long := strings.Repeat("Once upon a time ", 20)
	if _, err := s.Generate(ctx, long, greedy(4), nil); !errors.Is(err, ErrContextFull) {
		t.Errorf("prompt longer than the context: got %v", err)
	}
	res, err := s.Generate(ctx, "Once upon a time", greedy(100), nil)
	if !errors.Is(err, ErrContextFull) || res == nil || len(res.Tokens) == 0 || s.Pos() != 16 {
		t.Errorf("running into the context end: err %v, pos %d", err, s.Pos())
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.plan"), Options{}); err == nil {
		t.Error("missing model file opened")
	}
	if _, err := m.NewSession(SessionOptions{KVType: "q8"}); err == nil {
		t.Error("bad KV type accepted")
	}
}

func TestCancelStopsCleanly(t *testing.T) {
	m := openStories(t)
	s, _ := m.NewSession(SessionOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	res, err := s.Generate(ctx, "Once upon a time", greedy(50), func(int32, string) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if err != nil || res.StopReason != "cancelled" || len(res.Tokens) != 3 {
		t.Fatalf("err %v, stop %q, %d tokens", err, res.StopReason, len(res.Tokens))
	}
}

// TestSessionsShareModel runs sessions on one Model concurrently and checks
// each produces what a lone session produces.
func TestSessionsShareModel(t *testing.T) {
	m := openStories(t)
	prompts := []string{"Once upon a time", "Lily and Ben went to the park.", "The cat", "One day"}
	want := make([]string, len(prompts))
	for i, p := range prompts {
		s, _ := m.NewSession(SessionOptions{})
		res, err := s.Generate(context.Background(), p, greedy(24), nil)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = res.Text
	}
	var wg sync.WaitGroup
	got := make([]string, len(prompts))
	for i, p := range prompts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, _ := m.NewSession(SessionOptions{})
			if res, err := s.Generate(context.Background(), p, greedy(24), nil); err == nil {
				got[i] = res.Text
			}
		}()
	}
	wg.Wait()
	for i := range prompts {
		if got[i] != want[i] {
			t.Errorf("prompt %d: concurrent %q, alone %q", i, got[i], want[i])
		}
	}
}

func TestResetReusesSession(t *testing.T) {
	m := openStories(t)
	s, _ := m.NewSession(SessionOptions{})
	a, err := s.Generate(context.Background(), "Once upon a time", greedy(16), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Reset()
	b, err := s.Generate(context.Background(), "Once upon a time", greedy(16), nil)
	if err != nil || a.Text != b.Text {
		t.Fatalf("after Reset: %q (err %v), first run %q", b.Text, err, a.Text)
	}
}

func TestSeededSamplingRepeats(t *testing.T) {
	m := openStories(t)
	opts := GenerateOptions{MaxTokens: 32, Sampling: sample.DefaultParams()}
	opts.Sampling.Seed = 7
	var texts []string
	for i := 0; i < 2; i++ {
		s, _ := m.NewSession(SessionOptions{})
		res, err := s.Generate(context.Background(), "Once upon a time", opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, res.Text)
	}
	if texts[0] != texts[1] {
		t.Fatalf("same seed, different text: %q vs %q", texts[0], texts[1])
	}
}

func TestPlanRoundTripAndFingerprint(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.gguf")
	data, err := os.ReadFile(stories(t))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(model, data, 0o644)
	p, err := Compile(model, CompileOptions{Ctx: 256})
	if err != nil {
		t.Fatal(err)
	}
	planPath := filepath.Join(dir, "m.plan")
	if err := WritePlan(planPath, p); err != nil {
		t.Fatal(err)
	}
	m, err := Open(planPath, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	// Change one metadata byte: the fingerprint must catch it.
	i := strings.Index(string(data), "general.name")
	data[i+len("general.name")+12] ^= 1
	os.WriteFile(model, data, 0o644)
	if _, err := Open(planPath, Options{}); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Fatalf("changed model accepted: %v", err)
	}
	os.WriteFile(planPath, []byte(`{"format":"weft-plan","version":99}`), 0o644)
	if _, err := Open(planPath, Options{}); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("future plan version accepted: %v", err)
	}
}

package tokenizer

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/testenv"
)

// sharedDir returns ../shared beside the repository, skipping without it.
func sharedDir(t testing.TB) string { return testenv.Shared(t, "") }

var (
	loadMu sync.Mutex
	loaded = map[string]*Tokenizer{}
)

// loadTokenizer opens a GGUF under ../shared and builds its tokenizer,
// caching it across tests.
func loadTokenizer(t testing.TB, rel string) *Tokenizer {
	t.Helper()
	path := filepath.Join(sharedDir(t), rel)
	loadMu.Lock()
	defer loadMu.Unlock()
	if tk, ok := loaded[path]; ok {
		return tk
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	tk, err := FromGGUF(f)
	if err != nil {
		t.Fatalf("FromGGUF %s: %v", path, err)
	}
	loaded[path] = tk
	return tk
}

func openGGUF(tb testing.TB, path string) *gguf.File {
	tb.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

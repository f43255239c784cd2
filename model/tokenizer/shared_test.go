package tokenizer

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/weft-ml/weft/gguf"
)

// sharedDir finds ../shared next to the repository root, or skips.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("no go.mod above the test directory")
		}
		dir = parent
	}
	shared := filepath.Join(dir, "..", "shared")
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("shared test data not found at %s: %v", shared, err)
	}
	return shared
}

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

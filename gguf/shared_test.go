package gguf

import (
	"testing"

	"github.com/weft-ml/weft/internal/testenv"
)

// sharedDir returns ../shared beside the repository, skipping without it.
func sharedDir(t testing.TB) string { return testenv.Shared(t, "") }

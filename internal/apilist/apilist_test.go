package apilist

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/weft-ml/weft"

// TestAPIListing fails when the exported surface differs from api.txt:
// a name added, removed or changed without updating the listing.
func TestAPIListing(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join(root, "api.txt"))
	require.NoError(t, err)
	lines, err := List(root, module)
	require.NoError(t, err)
	have := map[string]bool{}
	for _, l := range lines {
		have[l] = true
	}
	listed := map[string]bool{}
	var added, removed []string
	for _, l := range strings.Split(strings.TrimRight(string(want), "\n"), "\n") {
		listed[l] = true
		if !have[l] {
			removed = append(removed, "- "+l)
		}
	}
	for _, l := range lines {
		if !listed[l] {
			added = append(added, "+ "+l)
		}
	}
	if len(added)+len(removed) > 0 {
		t.Fatalf("the exported API differs from api.txt (%d added, %d removed or changed):\n%s\n"+
			"If the change is deliberate, run `make api` and commit api.txt; otherwise unexport the names.",
			len(added), len(removed), strings.Join(append(removed, added...), "\n"))
	}
}

// TestListSeesEveryKind checks the lister on a package of its own: each
// kind of exported declaration is listed and unexported ones are not (a
// lister that saw nothing would pass TestAPIListing against an empty
// api.txt).
func TestListSeesEveryKind(t *testing.T) {
	dir := t.TempDir()
	src := `package demo

type Shape interface { Area() float64; hidden() }
type Box struct { W, H int; depth int }
type id int
type Pair[K comparable, V any] struct{ Key K }
func (b *Box) Area() float64 { return 0 }
func (b id) Exported() {}
func New(w, h int) (*Box, error) { return nil, nil }
func helper() {}
const Max = 3
var Default Box
var private = 1
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/demo\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "demo.go"), []byte(src), 0o644))
	lines, err := List(dir, "example.com/demo")
	require.NoError(t, err)
	p := "pkg example.com/demo, "
	require.Equal(t, []string{
		p + "const Max",
		p + "func New(w, h int) (*Box, error)",
		p + "method (*Box) Area() float64",
		p + "type Box struct",
		p + "type Box, field H int",
		p + "type Box, field W int",
		p + "type Pair, field Key K",
		p + "type Pair[K comparable, V any] struct",
		p + "type Shape interface",
		p + "type Shape, method Area() float64",
		p + "var Default Box",
	}, lines)
}

// TestSurfaceDocumented fails for an exported declaration without a doc
// comment: every name in api.txt is something a user may read about.
func TestSurfaceDocumented(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	missing, err := Undocumented(root)
	require.NoError(t, err)
	require.Empty(t, missing, "exported declarations without a doc comment")
}

// TestUndocumentedFindsMissingDocs checks the doc check on a package of
// its own, so that it cannot pass by seeing nothing.
func TestUndocumentedFindsMissingDocs(t *testing.T) {
	dir := t.TempDir()
	src := `package demo

// Documented is.
func Documented() {}
func Bare() {}
type T int
func (T) String() string { return "" }
func (T) Method() {}
const (
	// A is.
	A = 1
	B = 2 // B is.
	C = 3
)
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "demo.go"), []byte(src), 0o644))
	missing, err := Undocumented(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"demo.go:5 Bare", "demo.go:6 T", "demo.go:8 Method", "demo.go:13 C"}, missing)
}

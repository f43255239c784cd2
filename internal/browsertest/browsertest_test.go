package browsertest

import (
	"image"
	"image/color"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCount(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 10, 4))
	for x := range 10 {
		img.Set(x, 0, color.RGBA{0x31, 0x82, 0xbd, 0xff})
		img.Set(x, 1, color.RGBA{0x31 + 20, 0x82, 0xbd, 0xff}) // near
		img.Set(x, 2, color.RGBA{0x31 + 40, 0x82, 0xbd, 0xff}) // not
	}
	blue := Colour{0x31, 0x82, 0xbd}
	assert.Equal(t, 20, Count(img, img.Bounds(), blue, 24))
	assert.Equal(t, 10, Count(img, img.Bounds(), blue, 12))
	assert.Equal(t, 8, Count(img, image.Rect(0, 0, 4, 10), blue, 24), "only within the area")
}

// A page with one blue square renders, and the square is counted.
func TestScreenshot(t *testing.T) {
	page := filepath.Join(t.TempDir(), "square.svg")
	require.NoError(t, os.WriteFile(page, []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100">`+
		`<rect width="200" height="100" fill="white"/><rect x="10" y="10" width="50" height="40" fill="#3182bd"/></svg>`), 0o644))
	img := Screenshot(t, page, 200, 100)
	n := Count(img, img.Bounds(), Colour{0x31, 0x82, 0xbd}, 12)
	assert.InDelta(t, 50*40, n, 200, "the square's pixels")
}

// RequireShown fails a test whose picture lacks a swatch.
func TestRequireShown(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 10, 10))
	for x := range 10 {
		img.Set(x, 0, color.RGBA{0x31, 0x82, 0xbd, 0xff})
	}
	RequireShown(t, img, 5, Engines[0])
	fake := &testing.T{}
	inner := &recorder{TB: fake}
	RequireShown(inner, img, 5, Engines...)
	assert.Equal(t, 2, inner.errors, "llama.cpp's and ik_llama.cpp's colours are missing")
}

// recorder counts Errorf calls instead of failing.
type recorder struct {
	testing.TB
	errors int
}

func (r *recorder) Helper()               {}
func (r *recorder) Logf(string, ...any)   {}
func (r *recorder) Errorf(string, ...any) { r.errors++ }

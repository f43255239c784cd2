package browsertest

import (
	"context"
	"errors"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// timeout bounds one browser run: a stuck browser must not hang CI.
const timeout = 90 * time.Second

// Run runs headless Chromium with args after its usual flags and a window
// of width × height pixels, and returns its standard output. It skips t
// where Chromium is not installed and fails it where Chromium fails.
func Run(t testing.TB, width, height int, args ...string) []byte {
	t.Helper()
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium): browser check skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--window-size=" + strconv.Itoa(width) + "," + strconv.Itoa(height)}
	cmd := exec.CommandContext(ctx, browser, append(flags, args...)...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr)
	}
	return out
}

// Screenshot renders the file page (an .svg or .html weft wrote) in a
// window of width × height pixels and returns the picture.
func Screenshot(t testing.TB, page string, width, height int) image.Image {
	t.Helper()
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), filepath.Base(page)+".png")
	Run(t, width, height, "--screenshot="+shot, "file://"+abs)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot: %v", err)
	}
	return img
}

// Colour is an RGB colour with 8 bits a channel, as a chart's fill.
type Colour struct{ R, G, B uint8 }

// Count returns how many pixels of img within area are within tolerance of
// c on every channel (anti-aliased edges and blending stay near their
// fill).
func Count(img image.Image, area image.Rectangle, c Colour, tolerance int) int {
	near := func(v uint32, want uint8) bool {
		d := int(v>>8) - int(want)
		return d < tolerance && -d < tolerance
	}
	n := 0
	area = area.Intersect(img.Bounds())
	for y := area.Min.Y; y < area.Max.Y; y++ {
		for x := area.Min.X; x < area.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if near(r, c.R) && near(g, c.G) && near(b, c.B) {
				n++
			}
		}
	}
	return n
}

// Swatch is a colour a picture must show, named for the failure message.
type Swatch struct {
	Name   string
	Colour Colour
}

// Engines are the colours weft's benchmark charts draw each engine in.
var Engines = []Swatch{
	{"weft", Colour{0x31, 0x82, 0xbd}},
	{"llama.cpp", Colour{0xbd, 0xbd, 0xbd}},
	{"ik_llama.cpp", Colour{0xe6, 0x55, 0x0d}},
}

// RequireShown fails t unless each swatch covers more than min pixels of
// img (within tolerance 12 on every channel), logging each count.
func RequireShown(t testing.TB, img image.Image, min int, swatches ...Swatch) {
	t.Helper()
	for _, s := range swatches {
		n := Count(img, img.Bounds(), s.Colour, 12)
		t.Logf("%s: %d pixels", s.Name, n)
		if n <= min {
			t.Errorf("%s is not drawn: %d pixels of its colour, want more than %d", s.Name, n, min)
		}
	}
}

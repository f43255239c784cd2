package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEncodeVDPBF16PS checks the encoder against GNU as's encodings
// (binutils 2.40, `vdpbf16ps %zmmB,%zmmA,%zmmD`), chosen so that every
// register bit is set and clear somewhere.
func TestEncodeVDPBF16PS(t *testing.T) {
	for _, c := range []struct {
		dst, src1, src2 int
		want            string
	}{
		{0, 0, 0, "62 f2 7e 48 52 c0"},
		{31, 31, 31, "62 02 06 40 52 ff"},
		{17, 9, 26, "62 82 36 48 52 ca"},
		{8, 16, 1, "62 72 7e 40 52 c1"},
		{1, 2, 3, "62 f2 6e 48 52 cb"},
		{24, 5, 15, "62 42 56 48 52 c7"},
		{7, 23, 12, "62 d2 46 40 52 fc"},
	} {
		if got := hexBytes(encodeVDPBF16PS(c.dst, c.src1, c.src2)); got != c.want {
			t.Errorf("VDPBF16PS Z%d, Z%d, Z%d: got %s, want %s", c.src2, c.src1, c.dst, got, c.want)
		}
	}
}

// TestEncodeVDPBF16PSAllRegisters compares all 32³ register choices with
// what GNU as assembles, where as and objdump are installed.
func TestEncodeVDPBF16PSAllRegisters(t *testing.T) {
	as, err1 := exec.LookPath("as")
	objdump, err2 := exec.LookPath("objdump")
	if err1 != nil || err2 != nil {
		t.Skip("needs GNU as and objdump")
	}
	dir := t.TempDir()
	var src bytes.Buffer
	for d := range 32 {
		for a := range 32 {
			for b := range 32 {
				fmt.Fprintf(&src, "vdpbf16ps %%zmm%d, %%zmm%d, %%zmm%d\n", b, a, d)
			}
		}
	}
	s, o := filepath.Join(dir, "all.s"), filepath.Join(dir, "all.o")
	if err := os.WriteFile(s, src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "--64", s, "-o", o).CombinedOutput(); err != nil {
		t.Skipf("as cannot assemble VDPBF16PS: %v: %s", err, out)
	}
	out, err := exec.Command(objdump, "-d", o).Output()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 3 || !strings.HasPrefix(f[2], "vdpbf16ps") {
			continue
		}
		var b, a, d int
		if _, err := fmt.Sscanf(f[2], "vdpbf16ps %%zmm%d,%%zmm%d,%%zmm%d", &b, &a, &d); err != nil {
			t.Fatalf("%q: %v", f[2], err)
		}
		if got, want := hexBytes(encodeVDPBF16PS(d, a, b)), strings.TrimSpace(f[1]); got != want {
			t.Errorf("%s: got %s, as gives %s", f[2], got, want)
		}
		n++
	}
	if n != 32*32*32 {
		t.Fatalf("checked %d encodings, want %d", n, 32*32*32)
	}
}

func hexBytes(b [6]byte) string {
	parts := make([]string, len(b))
	for i, x := range b {
		parts[i] = fmt.Sprintf("%02x", x)
	}
	return strings.Join(parts, " ")
}

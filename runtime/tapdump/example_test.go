package tapdump_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/weft-ml/weft/runtime/tapdump"
)

// Write two dumps that differ from the second node on and find where.
func ExampleDiff() {
	dir, _ := os.MkdirTemp("", "tapdump")
	defer os.RemoveAll(dir)
	write := func(name string, scale float32) *tapdump.Dump {
		w, _ := tapdump.Create(filepath.Join(dir, name), tapdump.Meta{})
		for i, node := range []string{"norm", "mlp", "out"} {
			v := []float32{1, 2, 3, 4}
			if i > 0 {
				v[0] *= scale
			}
			w.Write(tapdump.Entry{Node: i, Name: node, Op: "Op", Rows: 2, Width: 2}, v)
		}
		w.Close()
		d, _ := tapdump.Read(filepath.Join(dir, name))
		return d
	}
	r, err := tapdump.Diff(write("a", 1), write("b", 1.5), 1e-3)
	if err != nil {
		fmt.Println(err)
		return
	}
	c := r.Compared[r.First]
	fmt.Printf("first divergence: %s, max |Δ| %.2f, rel %.3f\n", c.Name, c.MaxAbs, c.Rel)
	// Output: first divergence: mlp, max |Δ| 0.50, rel 0.125
}

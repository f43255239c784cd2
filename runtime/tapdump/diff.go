package tapdump

import (
	"fmt"
	"io"
	"math"
)

// Comparison is one value found in both dumps.
type Comparison struct {
	Step  int
	Name  string
	Op    string
	Layer int
	// MaxAbs is the largest |a−b| over the elements; Rel is MaxAbs over
	// the largest magnitude in either value. (Element-wise relative
	// differences blow up wherever a value crosses zero, which every
	// activation does, so the value's own scale is the yardstick.) A NaN
	// or infinity in one value and not at the same place in the other
	// makes both +Inf.
	MaxAbs, Rel float64
	Shape       string // "" when the shapes agree, else both shapes
	Diverges    bool   // Rel above the tolerance, or shapes that differ
}

// Report is the node-by-node comparison of two dumps.
type Report struct {
	Compared     []Comparison // in the order of dump A
	OnlyA, OnlyB []string     // "step N name" of values in one dump only
	First        int          // index in Compared of the first diverging value, -1 when none
	Tol          float64
}

type key struct {
	step int
	name string
	k    int // occurrence of the name in the step
}

func keys(es []Entry) []key {
	seen := map[[2]any]int{}
	out := make([]key, len(es))
	for i, e := range es {
		id := [2]any{e.Step, e.Name}
		out[i] = key{e.Step, e.Name, seen[id]}
		seen[id]++
	}
	return out
}

// Diff compares the values a and b have in common; tol is the largest Rel
// that counts as agreement.
func Diff(a, b *Dump, tol float64) (*Report, error) {
	r := &Report{First: -1, Tol: tol}
	ka, kb := keys(a.Entries), keys(b.Entries)
	inB := map[key]int{}
	for i, k := range kb {
		inB[k] = i
	}
	used := make([]bool, len(kb))
	for i, k := range ka {
		j, ok := inB[k]
		if !ok {
			r.OnlyA = append(r.OnlyA, fmt.Sprintf("step %d %s", k.step, k.name))
			continue
		}
		used[j] = true
		ea, eb := a.Entries[i], b.Entries[j]
		c := Comparison{Step: ea.Step, Name: ea.Name, Op: ea.Op, Layer: ea.Layer}
		if ea.Rows != eb.Rows || ea.Width != eb.Width {
			c.Shape = fmt.Sprintf("[%d,%d] vs [%d,%d]", ea.Rows, ea.Width, eb.Rows, eb.Width)
			c.MaxAbs, c.Rel, c.Diverges = math.Inf(1), math.Inf(1), true
		} else {
			va, err := a.Values(ea)
			if err != nil {
				return nil, err
			}
			vb, err := b.Values(eb)
			if err != nil {
				return nil, err
			}
			c.MaxAbs, c.Rel = Compare(va, vb)
			c.Diverges = !(c.Rel <= tol)
		}
		if c.Diverges && r.First < 0 {
			r.First = len(r.Compared)
		}
		r.Compared = append(r.Compared, c)
	}
	for j, k := range kb {
		if !used[j] {
			r.OnlyB = append(r.OnlyB, fmt.Sprintf("step %d %s", k.step, k.name))
		}
	}
	return r, nil
}

// Compare returns the largest absolute difference of two equally long
// vectors and that over their largest magnitude (see Comparison).
func Compare(a, b []float32) (maxAbs, rel float64) {
	var scale float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		xBad, yBad := math.IsNaN(x) || math.IsInf(x, 0), math.IsNaN(y) || math.IsInf(y, 0)
		switch {
		case xBad || yBad:
			if !(xBad && yBad && (x == y || math.IsNaN(x) && math.IsNaN(y))) {
				return math.Inf(1), math.Inf(1)
			}
			continue
		}
		maxAbs = max(maxAbs, math.Abs(x-y))
		scale = max(scale, math.Abs(x), math.Abs(y))
	}
	if scale == 0 {
		return maxAbs, 0
	}
	return maxAbs, maxAbs / scale
}

// Write prints the report: one line per compared value (only the
// diverging ones and their neighbours when brief is set), the values in
// one dump only, and a last line naming the first diverging value.
func (r *Report) Write(w io.Writer, brief bool) {
	fmt.Fprintf(w, "%-5s %-40s %-20s %12s %12s\n", "step", "node", "op", "max |Δ|", "rel")
	for i, c := range r.Compared {
		if brief && !c.Diverges && !(r.First >= 0 && (i == r.First-1)) {
			continue
		}
		mark := ""
		switch {
		case c.Shape != "":
			mark = "  shapes " + c.Shape
		case i == r.First:
			mark = "  <- first divergence"
		case c.Diverges:
			mark = "  *"
		}
		fmt.Fprintf(w, "%-5d %-40s %-20s %12.4g %12.4g%s\n", c.Step, c.Name, c.Op, c.MaxAbs, c.Rel, mark)
	}
	for _, s := range r.OnlyA {
		fmt.Fprintf(w, "only in A: %s\n", s)
	}
	for _, s := range r.OnlyB {
		fmt.Fprintf(w, "only in B: %s\n", s)
	}
	if r.First < 0 {
		fmt.Fprintf(w, "%d values compared: all agree within rel %g\n", len(r.Compared), r.Tol)
		return
	}
	c := r.Compared[r.First]
	n := 0
	for _, x := range r.Compared {
		if x.Diverges {
			n++
		}
	}
	fmt.Fprintf(w, "%d of %d values differ by more than rel %g; first: step %d node %q (%s, layer %d), max |Δ| %.4g, rel %.4g\n",
		n, len(r.Compared), r.Tol, c.Step, c.Name, c.Op, c.Layer, c.MaxAbs, c.Rel)
}

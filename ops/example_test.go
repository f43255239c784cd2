package ops_test

import (
	"fmt"

	"github.com/weft-ml/weft/compute"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// Register an op with its type inference and a CPU kernel, then use it in
// a graph like a built-in. Each of the kernel's calls (one per thread)
// takes its span of the rows.
func ExampleRegister() {
	err := ops.Register(ops.Custom{
		Name:  "Clamp",
		Arity: 1,
		Attrs: []string{"lo", "hi"},
		Infer: func(in []graph.Type, _ graph.Attrs) (graph.Type, error) { return in[0], nil },
		CPU: func(c *ops.Call) error {
			lo, hi := c.Attrs.Float("lo"), c.Attrs.Float("hi")
			first, last := c.Span(c.Out.Rows)
			for r := first; r < last; r++ {
				for i, x := range c.In[0].Row(r) {
					c.Out.Row(r)[i] = min(max(x, lo), hi)
				}
			}
			return nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	b := compute.NewBuilder()
	b.Output("y", b.Op("Clamp", graph.Attrs{"lo": -1, "hi": 1}, b.Input("x", 3)))
	p, err := b.Compile(compute.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := p.NewSession()
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := s.Run(compute.F32("x", []float32{-3, 0.5, 7, 2, -0.25, -1}))
	fmt.Println(out["y"], err)
	// Output: [-1 0.5 1 1 -0.25 -1] <nil>
}

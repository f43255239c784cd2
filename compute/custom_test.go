package compute

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

// sameType infers a unary op's type: its F32 operand's.
func sameType(in []graph.Type, _ graph.Attrs) (graph.Type, error) {
	if in[0].DType != graph.F32 || len(in[0].Shape) != 2 {
		return graph.Type{}, fmt.Errorf("want an F32 matrix, got %s", in[0])
	}
	return in[0], nil
}

var registerOnce sync.Once

// Test ops, registered once per process: LeakyReLU (attribute slope, in
// place), RowDot (x, w matrix) -> per-row dot products with w's rows
// (reads an F32 weight matrix), Fail (errors on rows with a negative
// first value, panics on NaN).
var threadsSeen atomic.Int32

func registerTestOps(t *testing.T) {
	registerOnce.Do(func() {
		require.NoError(t, ops.Register(ops.Custom{Name: "LeakyReLU", Arity: 1, Attrs: []string{"slope"}, Infer: sameType, InPlace: []int{0},
			CPU: func(c *ops.Call) error {
				threadsSeen.Store(int32(c.Threads))
				slope := c.Attrs.Float("slope")
				lo, hi := c.Span(c.Out.Rows)
				for r := lo; r < hi; r++ {
					x, y := c.In[0].Row(r), c.Out.Row(r)
					for i, v := range x {
						if v < 0 {
							v *= slope
						}
						y[i] = v
					}
				}
				return nil
			}}))
		require.NoError(t, ops.Register(ops.Custom{Name: "RowDot", Arity: 2,
			Infer: func(in []graph.Type, _ graph.Attrs) (graph.Type, error) {
				if len(in[1].Shape) != 2 || in[1].Shape[1] != in[0].Shape[1] {
					return graph.Type{}, fmt.Errorf("weight %s does not match %s", in[1], in[0])
				}
				return graph.Type{DType: graph.F32, Shape: graph.Shape{in[0].Shape[0], in[1].Shape[0]}}, nil
			},
			CPU: func(c *ops.Call) error {
				lo, hi := c.Span(c.Out.Rows)
				w := c.In[1]
				for r := lo; r < hi; r++ {
					for j := 0; j < w.Rows; j++ {
						var s float32
						for k, v := range c.In[0].Row(r) {
							s += v * w.Row(j)[k]
						}
						c.Out.Row(r)[j] = s
					}
				}
				return nil
			}}))
		require.NoError(t, ops.Register(ops.Custom{Name: "Fail", Arity: 1, Infer: sameType, CPU: func(c *ops.Call) error {
			lo, hi := c.Span(c.Out.Rows)
			for r := lo; r < hi; r++ {
				switch x := c.In[0].Row(r)[0]; {
				case math.IsNaN(float64(x)):
					panic("NaN in row")
				case x < 0:
					return errors.New("negative row")
				}
				copy(c.Out.Row(r), c.In[0].Row(r))
			}
			return nil
		}}))
	})
}

func TestCustomOps(t *testing.T) {
	registerTestOps(t)
	b := NewBuilder()
	x := b.Input("x", 3)
	a := b.NamedOp("LeakyReLU", "a", graph.Attrs{"slope": 0.5}, x)
	a2 := b.NamedOp("LeakyReLU", "a2", graph.Attrs{"slope": 0.5}, x) // identical: not merged
	d := b.Op("RowDot", nil, b.Op(ops.Add, nil, a, a2), b.Const("w", []float32{1, 0, 0, 0, 1, 1}, 2, 3))
	b.Output("d", d)
	p, err := b.Compile(Options{MaxRows: 8, Threads: 2})
	require.NoError(t, err)
	leaky := 0
	for _, n := range p.Graph().Nodes {
		if n.Op == "LeakyReLU" {
			leaky++
			assert.Equal(t, "cpu", n.Backend)
		}
	}
	assert.Equal(t, 2, leaky, "the passes leave custom ops alone")
	s, err := p.NewSession()
	require.NoError(t, err)
	out, err := s.Run(F32("x", []float32{1, -2, 3, -4, 5, -6, 0, 0, 0}))
	require.NoError(t, err)
	// 2·leaky(x) = (2,-2,6), (-4,10,-6), 0; dots with rows (1,0,0) and (0,1,1).
	assert.Equal(t, []float32{2, 4, -4, 4, 0, 0}, out["d"])
	assert.Equal(t, int32(2), threadsSeen.Load(), "told the thread count")

	_, err = s.Run(F32("x", []float32{1}))
	assert.ErrorContains(t, err, "not whole rows")
	b2 := NewBuilder()
	b2.Output("y", b2.Op("LeakyReLU", graph.Attrs{"slop": 1}, b2.Input("x", 2)))
	_, err = b2.Compile(Options{})
	assert.ErrorContains(t, err, `custom op LeakyReLU takes no attribute "slop" (attributes: [slope])`)
}

// A custom kernel's error or panic fails that step with an error naming
// the op; the session runs the next step normally.
func TestCustomKernelFailures(t *testing.T) {
	registerTestOps(t)
	b := NewBuilder()
	b.Output("y", b.Op("Fail", nil, b.Input("x", 2)))
	p, err := b.Compile(Options{Threads: 4})
	require.NoError(t, err)
	s, err := p.NewSession()
	require.NoError(t, err)
	_, err = s.Run(F32("x", []float32{1, 1, -1, 1, 2, 2}))
	assert.ErrorContains(t, err, "custom op Fail: negative row")
	_, err = s.Run(F32("x", []float32{1, 1, float32(math.NaN()), 1}))
	assert.ErrorContains(t, err, "custom op Fail: kernel panicked: NaN in row")
	out, err := s.Run(F32("x", []float32{1, 2, 3, 4}))
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2, 3, 4}, out["y"])
}

func TestRegisterRefusals(t *testing.T) {
	registerTestOps(t)
	cpu := func(*ops.Call) error { return nil }
	for _, c := range []struct {
		op   ops.Custom
		want string
	}{
		{ops.Custom{Infer: sameType, CPU: cpu}, "without a name"},
		{ops.Custom{Name: "A1", CPU: cpu}, "no type inference"},
		{ops.Custom{Name: "A2", Infer: sameType}, "no CPU kernel"},
		{ops.Custom{Name: ops.SiLU, Arity: 1, Infer: sameType, CPU: cpu}, `op "SiLU" already registered`},
		{ops.Custom{Name: "LeakyReLU", Arity: 1, Infer: sameType, CPU: cpu}, "already registered"},
		{ops.Custom{Name: "A3", Arity: 1, Infer: sameType, CPU: cpu, InPlace: []int{1}}, "InPlace operand 1 of 1"},
		{ops.Custom{Name: "A4", Arity: 1, Infer: sameType, CPU: cpu, Vulkan: &ops.VulkanKernel{}}, "needs SPIR-V"},
	} {
		assert.ErrorContains(t, ops.Register(c.op), c.want)
	}
	assert.True(t, ops.IsCustom("LeakyReLU"))
	assert.False(t, ops.IsCustom(ops.SiLU))
}

// A custom op that declares InPlace takes its dead operand's buffer in
// the memory plan; one that does not never does.
func TestCustomInPlace(t *testing.T) {
	registerTestOps(t)
	b := NewBuilder()
	s := b.NamedOp(ops.SiLU, "s", nil, b.Input("x", 64))
	l := b.NamedOp("LeakyReLU", "l", graph.Attrs{"slope": 0.1}, s)
	f := b.NamedOp("Fail", "f", nil, l)
	b.Output("y", f)
	p, err := b.Compile(Options{MaxRows: 4})
	require.NoError(t, err)
	buf := map[string]int64{}
	for _, n := range p.Graph().Nodes {
		if n.Buffer != nil {
			buf[n.Name] = n.Buffer.Offset
		}
	}
	assert.Equal(t, buf["s"], buf["l"], "LeakyReLU runs in place")
	assert.NotEqual(t, buf["l"], buf["f"], "Fail does not")
	ss, err := p.NewSession()
	require.NoError(t, err)
	x := make([]float32, 64)
	for i := range x {
		x[i] = float32(i) + 1
	}
	out, err := ss.Run(F32("x", x))
	require.NoError(t, err)
	assert.InDelta(t, 1/(1+math.Exp(-1)), out["y"][0], 1e-6)
}

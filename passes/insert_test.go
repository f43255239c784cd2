package passes

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

func named(name string) Pass {
	return New(name, func(*graph.Graph) (Change, error) { return Change{}, nil })
}

func TestInsert(t *testing.T) {
	list, err := Select(Config{}, nil, nil, false)
	require.NoError(t, err)
	got, err := Insert(list,
		Insertion{Pass: named("mine"), Before: "fuse-gateup"},
		Insertion{Pass: named("after-mine"), After: "mine"},
		Insertion{Pass: named("last")})
	require.NoError(t, err)
	assert.Equal(t, []string{"simplify", "fuse-dequant", "fuse-qkv", "mine", "after-mine", "fuse-gateup", "fuse-norm", "fuse-residual", "fuse-bias",
		"placement", "weight-layout", "memory-plan", "last"}, passNames(got))
	assert.Len(t, list, len(Names()), "the list given is not changed")

	for _, c := range []struct {
		in   Insertion
		want string
	}{
		{Insertion{}, "nil pass"},
		{Insertion{Pass: named("")}, "a name of its own"},
		{Insertion{Pass: named("all")}, "a name of its own"},
		{Insertion{Pass: named("simplify")}, "already in the pipeline or built in"},
		{Insertion{Pass: named("x"), Before: "simplify", After: "placement"}, "not both"},
		{Insertion{Pass: named("x"), After: "fuse-everything"}, `pass "fuse-everything" is not in the pipeline`},
	} {
		_, err := Insert(list, c.in)
		assert.ErrorContains(t, err, c.want)
	}
	o0, err := Select(Config{}, nil, nil, true)
	require.NoError(t, err)
	_, err = Insert(o0, Insertion{Pass: named("x"), Before: "fuse-gateup"})
	assert.ErrorContains(t, err, "[placement]", "the anchor was left out")
}

// An inserted pass runs in its place, is verified like a built-in (one
// that breaks the graph stops the pipeline, naming it), logged and
// dumped by name; the fusions leave the op it swapped in alone.
func TestInsertedPassRunsLikeABuiltIn(t *testing.T) {
	g, _ := stories(t)
	swap := New("swap-silu", func(g *graph.Graph) (Change, error) {
		var c Change
		for _, n := range g.Nodes {
			if n.Op == ops.SiLU {
				n.Op = ops.GELU
				c.add(n.ID, "%s: SiLU -> GELU", n.Name)
			}
		}
		return c, nil
	})
	list, err := Select(Config{Tokens: 64}, nil, nil, false)
	require.NoError(t, err)
	list, err = Insert(list, Insertion{Pass: swap, Before: "fuse-gateup"})
	require.NoError(t, err)
	var dumped []string
	pl := Pipeline{Passes: list, DumpAfter: []string{"swap-silu"}, Dump: func(pass string, g *graph.Graph) error {
		dumped = append(dumped, pass)
		return nil
	}}
	log, err := pl.Run(g)
	require.NoError(t, err)
	assert.Equal(t, []string{"swap-silu"}, dumped)
	assert.Equal(t, "swap-silu", log[3].Name)
	assert.Equal(t, 5, log[3].Count, "one per layer")
	geglu, swiglu := 0, 0
	for _, n := range g.Nodes {
		switch n.Op {
		case ops.MatMulGateUpGeGLU:
			geglu++
		case ops.MatMulGateUpSwiGLU, ops.SiLU:
			swiglu++
		}
	}
	assert.Equal(t, 5, geglu, "the swapped GELUs fuse as GELU-gated")
	assert.Zero(t, swiglu)

	bad := New("break", func(g *graph.Graph) (Change, error) {
		g.Nodes[len(g.Nodes)-1].Inputs[0] = len(g.Nodes) + 5
		return Change{}, nil
	})
	failing := New("fail", func(*graph.Graph) (Change, error) { return Change{}, errors.New("no") })
	for _, p := range []Pass{bad, failing} {
		g, _ := stories(t)
		list, err := Insert(list[:0:0], Insertion{Pass: p})
		require.NoError(t, err)
		_, err = (&Pipeline{Passes: list}).Run(g)
		assert.ErrorContains(t, err, "pass "+p.Name())
	}
}

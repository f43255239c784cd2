package runtime

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/passes"
)

// A program's own pass, inserted before the fusions, changes the model
// that runs (here one norm's eps), is logged in the plan in its place,
// and the taps see its effect start at that norm.
func TestInsertedPassChangesTheModel(t *testing.T) {
	eps := passes.New("wide-eps", func(g *graph.Graph) (passes.Change, error) {
		var c passes.Change
		for _, n := range g.Nodes {
			if n.Op == ops.RMSNorm && n.Name == "blk.3.attn_norm" {
				n.Attrs["eps"] = 0.5
				c.Count++
			}
		}
		return c, nil
	})
	var names []string
	m, err := Open(stories(t), Options{Taps: "*", Compile: CompileOptions{Insert: []passes.Insertion{{Pass: eps, Before: "fuse-norm"}}}})
	require.NoError(t, err)
	defer m.Close()
	for _, e := range m.Plan.Passes {
		names = append(names, e.Name)
	}
	assert.Equal(t, []string{"simplify", "fuse-dequant", "fuse-qkv", "fuse-gateup", "wide-eps", "fuse-norm"}, names[:6])
	assert.Equal(t, 1, m.Plan.Passes[4].Count)

	want := map[string][]float32{}
	first := ""
	bm, err := Open(stories(t), Options{Taps: "*"})
	require.NoError(t, err)
	defer bm.Close()
	record := func(into map[string][]float32) TapFunc {
		return func(ti TapInfo, v []float32) error {
			into[ti.Name] = append([]float32(nil), v...)
			return nil
		}
	}
	s0, err := bm.NewSession(SessionOptions{Tap: record(want)})
	require.NoError(t, err)
	got := map[string][]float32{}
	var order []string
	s1, err := m.NewSession(SessionOptions{Tap: func(ti TapInfo, v []float32) error {
		order = append(order, ti.Name)
		return record(got)(ti, v)
	}})
	require.NoError(t, err)
	prompt := []int32{1, 400, 52}
	_, err = s0.EvalContext(context.Background(), prompt, false)
	require.NoError(t, err)
	_, err = s1.EvalContext(context.Background(), prompt, false)
	require.NoError(t, err)
	for _, name := range order {
		if !assert.ObjectsAreEqual(want[name], got[name]) {
			first = name
			break
		}
	}
	assert.Equal(t, "blk.3.attn_norm+attn_norm_w", first)
}

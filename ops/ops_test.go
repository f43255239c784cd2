package ops_test

import (
	"strings"
	"testing"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

func infer(t *testing.T, op string, a graph.Attrs, in ...graph.Type) (graph.Type, error) {
	t.Helper()
	d, ok := graph.Lookup(op)
	if !ok {
		t.Fatalf("op %s not registered", op)
	}
	return d.Infer(in, a)
}

var (
	act   = graph.Type{DType: graph.F32, Shape: graph.S(graph.Tokens, 64)}
	kv    = graph.Type{DType: graph.F32, Shape: graph.S(graph.Tokens, 32)}
	pos   = graph.Type{DType: graph.I32, Shape: graph.S(graph.Tokens)}
	q4    = graph.Type{DType: graph.DType(2), Shape: graph.S(128, 64)} // Q4_0 [N,K]
	attrs = graph.Attrs{"heads": 8, "kv_heads": 4, "head_dim": 8, "scale": 0.35}
)

func TestInferValid(t *testing.T) {
	cases := []struct {
		op   string
		a    graph.Attrs
		in   []graph.Type
		want string
	}{
		{ops.MatMul, nil, []graph.Type{act, q4}, "F32[T,128]"},
		{ops.GetRows, nil, []graph.Type{q4, pos}, "F32[T,64]"},
		{ops.Mul, nil, []graph.Type{act, {DType: graph.F32, Shape: graph.S(64)}}, "F32[T,64]"},
		{ops.RoPE, graph.Attrs{"heads": 8, "head_dim": 8, "dims": 8, "base": 10000, "freq_scale": 1}, []graph.Type{act, pos}, "F32[T,64]"},
		{ops.Attention, attrs, []graph.Type{act, kv, kv, pos}, "F32[T,64]"},
		{ops.SelectRows, nil, []graph.Type{act, {DType: graph.I32, Shape: graph.S(graph.Rows)}}, "F32[R,64]"},
		// A row whose width divides the other's repeats along it (a per-head weight).
		{ops.Mul, nil, []graph.Type{act, {DType: graph.F32, Shape: graph.S(32)}}, "F32[T,64]"},
		{ops.RMSNormMul, graph.Attrs{"group": 32}, []graph.Type{act, {DType: graph.F32, Shape: graph.S(32)}}, "F32[T,64]"},
	}
	for _, c := range cases {
		got, err := infer(t, c.op, c.a, c.in...)
		if err != nil || got.String() != c.want {
			t.Errorf("%s: %v (err %v), want %s", c.op, got, err, c.want)
		}
	}
}

func TestInferRejects(t *testing.T) {
	cases := []struct {
		op   string
		a    graph.Attrs
		in   []graph.Type
		want string
	}{
		{ops.MatMul, nil, []graph.Type{act, {DType: graph.DType(2), Shape: graph.S(128, 32)}}, "inner dimensions"},
		{ops.Mul, nil, []graph.Type{act, {DType: graph.F32, Shape: graph.S(48)}}, "broadcast"},
		{ops.RMSNorm, graph.Attrs{"group": 48}, []graph.Type{act}, "dividing the row width"},
		{ops.RMSNormMul, graph.Attrs{"group": 16}, []graph.Type{act, {DType: graph.F32, Shape: graph.S(32)}}, "normalised width 16"},
		{ops.RoPE, graph.Attrs{"heads": 8, "head_dim": 8, "dims": 10, "base": 10000, "freq_scale": 1}, []graph.Type{act, pos}, "rotated dims"},
		{ops.Attention, graph.Attrs{"heads": 8, "kv_heads": 3, "head_dim": 8}, []graph.Type{act, kv, kv, pos}, "multiple"},
		{ops.GetRows, nil, []graph.Type{q4, act}, "indices"},
	}
	for _, c := range cases {
		if _, err := infer(t, c.op, c.a, c.in...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.op, err, c.want)
		}
	}
}

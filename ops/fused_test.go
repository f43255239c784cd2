package ops_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
)

func TestInferMatMulBias(t *testing.T) {
	bias := graph.Type{DType: graph.F32, Shape: graph.S(128)}
	got, err := infer(t, ops.MatMulBias, nil, act, q4, bias)
	require.NoError(t, err)
	assert.Equal(t, "F32[T,128]", got.String())
	for _, b := range []graph.Type{
		{DType: graph.F32, Shape: graph.S(64)},                // wrong width
		{DType: graph.F32, Shape: graph.S(1, 128)},            // the kernels read a 1-D row only
		{DType: graph.F32, Shape: graph.S(graph.Tokens, 128)}, // a residual is MatMulAdd's
		{DType: graph.DType(1), Shape: graph.S(128)},          // F16
	} {
		_, err := infer(t, ops.MatMulBias, nil, act, q4, b)
		assert.ErrorContains(t, err, "is not an F32 vector of the product's width", "bias %s", b)
	}
}

func TestInferGateUpGeGLU(t *testing.T) {
	got, err := infer(t, ops.MatMulGateUpGeGLU, nil, act, q4, q4)
	require.NoError(t, err)
	assert.Equal(t, "F32[T,128]", got.String())
	_, err = infer(t, ops.MatMulGateUpGeGLU, nil, act, q4, graph.Type{DType: graph.DType(2), Shape: graph.S(64, 64)})
	assert.ErrorContains(t, err, "differ")
}

func TestMatMulWeightsOfFusedOps(t *testing.T) {
	n := &graph.Node{Op: ops.MatMulBias, Inputs: []int{1, 2, 3}}
	assert.Equal(t, []int{2}, ops.MatMulWeights(n))
	n = &graph.Node{Op: ops.MatMulGateUpGeGLU, Inputs: []int{1, 2, 3}}
	assert.Equal(t, []int{2, 3}, ops.MatMulWeights(n))
	assert.True(t, ops.IsFused(ops.MatMulBias))
	assert.True(t, ops.IsFused(ops.MatMulGateUpGeGLU))
}

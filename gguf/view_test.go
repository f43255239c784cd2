package gguf

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// A view reads the outermost slices of a stored tensor: rows of a
// matrix, elements of a vector; a bad range or base is not a tensor.
func TestViews(t *testing.T) {
	mat := make([]byte, 4*3*5) // F32 [5 rows][3]
	for i := range mat {
		mat[i] = byte(i)
	}
	vec := []byte{0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64} // F32 1, 2, 3
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, nil, []TensorSpec{
		{Name: "m", Dims: []uint64{3, 5}, Type: TypeF32, Data: mat},
		{Name: "v", Dims: []uint64{3}, Type: TypeF32, Data: vec},
	}))
	f, err := Parse(buf.Bytes())
	require.NoError(t, err)

	rows, ok := f.Tensor(ViewName("m", 1, 4))
	require.True(t, ok)
	require.Equal(t, []uint64{3, 3}, rows.Dims)
	require.Equal(t, mat[12:48], f.TensorData(rows))
	again, _ := f.Tensor(ViewName("m", 1, 4))
	require.Same(t, rows, again)

	elems, ok := f.Tensor(ViewName("v", 2, 3))
	require.True(t, ok)
	require.Equal(t, []uint64{1}, elems.Dims)
	require.Equal(t, vec[8:12], f.TensorData(elems))

	for _, bad := range []string{ViewName("m", 4, 6), ViewName("m", 2, 2), ViewName("x", 0, 1), "m@rows=1", "m@rows=a:2", "m@rows=-1:2"} {
		_, ok := f.Tensor(bad)
		require.False(t, ok, bad)
	}
}

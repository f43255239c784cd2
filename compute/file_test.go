package compute

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/ops"
)

// A weight read from a GGUF file: stories260K's embedding table, looked
// up by index, gives the file's rows.
func TestFileWeight(t *testing.T) {
	f, err := gguf.Open(filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf"))
	require.NoError(t, err)
	defer f.Close()
	b := NewBuilder()
	b.Output("e", b.Op(ops.GetRows, nil, b.FileWeight(f, "token_embd.weight"), b.InputIDs("ids")))
	b.FileWeight(f, "no.such.tensor")
	_, err = b.Compile(Options{})
	require.ErrorContains(t, err, `weight "no.such.tensor" is not in`)

	b = NewBuilder()
	b.Output("e", b.Op(ops.GetRows, nil, b.FileWeight(f, "token_embd.weight"), b.InputIDs("ids")))
	p, err := b.Compile(Options{MaxRows: 2})
	require.NoError(t, err)
	s, err := p.NewSession()
	require.NoError(t, err)
	out, err := s.Run(I32("ids", []int32{7, 300}))
	require.NoError(t, err)
	ti, _ := f.Tensor("token_embd.weight")
	raw := f.TensorData(ti)
	width := int(ti.Dims[0])
	for i, id := range []int{7, 300} {
		for j := 0; j < width; j++ {
			want := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(id*width+j):]))
			assert.Equal(t, want, out["e"][i*width+j])
		}
	}
}

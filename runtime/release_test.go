package runtime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A closed session refuses to run; Model.Close releases the sessions left
// open and is safe after them.
func TestSessionClose(t *testing.T) {
	m, err := Open(stories(t), Options{})
	require.NoError(t, err)
	a, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	b, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	require.NoError(t, a.Close())
	require.NoError(t, a.Close(), "closing twice is harmless")
	_, err = a.Eval([]int32{1, 2}, false)
	assert.ErrorIs(t, err, ErrSessionClosed)
	_, err = b.Eval([]int32{1, 2}, false)
	require.NoError(t, err, "other sessions are unaffected")
	require.NoError(t, m.Close())
	_, err = b.Eval([]int32{3}, false)
	assert.Error(t, err)
	assert.NoError(t, b.Close())
}

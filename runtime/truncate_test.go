package runtime

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTruncateReusesPrefix: a conversation re-sent after Truncate to the
// prefix it shares with History generates what a fresh session does, so
// the kept KV cells are the right ones.
func TestTruncateReusesPrefix(t *testing.T) {
	m := openStories(t)
	ctx := context.Background()
	first, err := m.Tokenizer.Encode("Once upon a time, there was a little dog", true, false)
	require.NoError(t, err)
	second, err := m.Tokenizer.Encode("Once upon a time, there was a big cat", true, false)
	require.NoError(t, err)

	fresh, err := m.NewSession(SessionOptions{Ctx: 128})
	require.NoError(t, err)
	want, err := fresh.GenerateTokens(ctx, second, greedy(12), nil)
	require.NoError(t, err)

	s, err := m.NewSession(SessionOptions{Ctx: 128})
	require.NoError(t, err)
	_, err = s.GenerateTokens(ctx, first, greedy(12), nil)
	require.NoError(t, err)
	keep := 0
	for keep < len(second) && keep < s.Pos() && s.History()[keep] == second[keep] {
		keep++
	}
	require.Greater(t, keep, 3)
	require.NoError(t, s.Truncate(keep))
	assert.Equal(t, keep, s.Pos())
	got, err := s.GenerateTokens(ctx, second[keep:], greedy(12), nil)
	require.NoError(t, err)
	assert.Equal(t, want.Tokens, got.Tokens)
	assert.Equal(t, want.Text, got.Text)
}

func TestTruncateBounds(t *testing.T) {
	m := openStories(t)
	s, err := m.NewSession(SessionOptions{Ctx: 64})
	require.NoError(t, err)
	_, err = s.Generate(context.Background(), "Once upon a time", greedy(4), nil)
	require.NoError(t, err)
	require.Error(t, s.Truncate(-1))
	require.Error(t, s.Truncate(s.Pos()+1))
	require.NoError(t, s.Truncate(s.Pos()))
	require.NoError(t, s.Truncate(0))
	assert.Equal(t, 0, s.Pos())
	_, err = s.GenerateTokens(context.Background(), nil, greedy(4), nil)
	require.Error(t, err)
	require.NoError(t, m.Close())
	require.True(t, errors.Is(s.Truncate(0), ErrClosed))
}

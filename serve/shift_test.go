package serve

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/internal/testenv"
)

// TestContextShiftMatchesLlamaCpp: with --context-shift a request goes on
// past its slot's context as llama-server's does, and its greedy text is
// llama.cpp's through two shifts of a 64-token context
// (testdata/shift/reference, n_keep = the whole prompt: n_keep -1).
func TestContextShiftMatchesLlamaCpp(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "testdata", "shift", "reference", "stories260K.p1.c64k5.json"))
	require.NoError(t, err)
	var ref struct {
		GreedyText string `json:"greedy_text"`
		NGreedy    int    `json:"n_greedy"`
	}
	require.NoError(t, json.Unmarshal(raw, &ref))

	_, ts := start(t, Options{Parallel: 2, Ctx: 64, ContextShift: true, MaxTokens: 128})
	req := greedy("Once upon a time", ref.NGreedy)
	req["n_keep"] = -1
	status, resp := post(t, ts, "/v1/completions", req)
	require.Equal(t, http.StatusOK, status, "%v", resp)
	assert.Equal(t, ref.GreedyText, choiceText(t, resp))
	assert.Equal(t, 2.0, metric(t, ts, "weft_context_shifts_total"))

	// Without the shift the request ends at the full slot.
	_, ts2 := start(t, Options{Parallel: 2, Ctx: 64})
	status, resp = post(t, ts2, "/v1/completions", greedy("Once upon a time", 60))
	require.Equal(t, http.StatusOK, status, "%v", resp)
	c := resp["choices"].([]any)[0].(map[string]any)
	assert.Equal(t, "length", c["finish_reason"])
	assert.EqualValues(t, 60, resp["usage"].(map[string]any)["completion_tokens"], "64 cells: 5 prompt tokens and 59 fed + the last one")

	req["n_keep"] = -3
	status, _ = post(t, ts, "/v1/completions", req)
	assert.Equal(t, http.StatusBadRequest, status)
}

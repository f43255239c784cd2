//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeSIGTERM: graphrun serve answers on the address it prints; on
// SIGTERM it stops taking connections, lets the request in flight finish
// and exits 143.
func TestServeSIGTERM(t *testing.T) {
	c := startChild(t, "serve", stories(t), "--port", "0", "--parallel", "2")
	addr := regexp.MustCompile(`on http://(127\.0\.0\.1:\d+)`)
	c.waitFor(t, "the address", func(_, errOut string) bool { return addr.MatchString(errOut) })
	_, errOut := c.output()
	url := "http://" + addr.FindStringSubmatch(errOut)[1]

	resp, err := http.Get(url + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// A long generation is running when the signal comes.
	type answer struct {
		status int
		body   map[string]any
	}
	done := make(chan answer, 1)
	go func() {
		body, _ := json.Marshal(map[string]any{"prompt": "Once upon a time", "max_tokens": 1000, "ignore_eos": true, "temperature": 0})
		resp, err := http.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			done <- answer{}
			return
		}
		defer resp.Body.Close()
		var out map[string]any
		b, _ := io.ReadAll(resp.Body)
		json.Unmarshal(b, &out)
		done <- answer{resp.StatusCode, out}
	}()
	c.waitFor(t, "a busy slot", func(_, _ string) bool {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return regexp.MustCompile(`(?m)^weft_(slots_busy 1|generated_tokens_total [1-9])`).Match(b)
	})
	status, _ := c.signal(t, syscall.SIGTERM)
	assert.Equal(t, 143, status)
	a := <-done
	require.Equal(t, http.StatusOK, a.status, "the request in flight finished: %v", a.body)
	assert.EqualValues(t, 1000, a.body["usage"].(map[string]any)["completion_tokens"])
	_, errOut = c.output()
	assert.Contains(t, errOut, "shutting down")
	_, err = http.Get(url + "/health")
	assert.Error(t, err, "no longer listening")
}

// TestServeEmbeddingsAndKey runs graphrun serve in-process with
// --embeddings and --api-key, and stops it by cancelling its context (as
// the first signal does).
func TestServeEmbeddingsAndKey(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var errOut bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{stories(t), "--port", "0", "--embeddings", "--pooling", "last", "--api-key", "k", "--ctx", "256"},
			io.Discard, lockedWriter{&mu, &errOut})
	}()
	addr := regexp.MustCompile(`on http://(127\.0\.0\.1:\d+)`)
	var url string
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		m := addr.FindStringSubmatch(errOut.String())
		if m != nil {
			url = "http://" + m[1]
		}
		return m != nil
	}, 60*time.Second, 10*time.Millisecond)
	req, _ := http.NewRequest("POST", url+"/v1/embeddings", strings.NewReader(`{"input": "Once upon a time"}`))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	req, _ = http.NewRequest("POST", url+"/v1/embeddings", strings.NewReader(`{"input": "Once upon a time"}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	var out struct {
		Data []struct{ Embedding []float32 }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	resp.Body.Close()
	require.Len(t, out.Data, 1)
	assert.Len(t, out.Data[0].Embedding, 64)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("graphrun serve did not stop after its context was cancelled")
	}
	mu.Lock()
	assert.Contains(t, errOut.String(), "shutting down")
	mu.Unlock()
}

package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/weft-ml/weft/runtime"
)

// EmbeddingTaps is the runtime.Options.Taps pattern a model must be
// opened with for Options.Embeddings: the final norm's output, the hidden
// state the output matmul reads (llama.cpp's "result_norm"). A CPU
// session that does not tap pays nothing for it.
const EmbeddingTaps = "result_norm"

// embedJob is one /v1/embeddings request: several inputs, run one after
// another on the embedding session between Batcher steps.
type embedJob struct {
	ctx    context.Context
	inputs [][]int32
	done   chan embedResult // buffered: the scheduler never waits
}

type embedResult struct {
	vectors [][]float32
	err     error
}

// embedder is a dedicated tapped session: the Batcher's slots are not
// tapped, and an embedding must not disturb their caches.
type embedder struct {
	sess    *runtime.Session
	last    bool      // pooling "last": the last token's state, else the mean
	sum     []float64 // running sum of the tapped rows
	lastRow []float32
	rows    int
}

func newEmbedder(m *runtime.Model, pooling string, ctx int) (*embedder, error) {
	e := &embedder{last: pooling == "last"}
	if pooling != "mean" && pooling != "last" {
		return nil, fmt.Errorf("embeddings pooling %q: want mean or last", pooling)
	}
	s, err := m.NewSession(runtime.SessionOptions{Ctx: ctx, Tap: e.tap})
	if err != nil {
		return nil, fmt.Errorf("embeddings need the model opened with runtime.Options{Taps: serve.EmbeddingTaps}: %w", err)
	}
	e.sess = s
	return e, nil
}

// tap collects the final norm's rows of each batch.
func (e *embedder) tap(t runtime.TapInfo, v []float32) error {
	if !strings.HasPrefix(t.Name, "result_norm") {
		return nil
	}
	if e.sum == nil {
		e.sum = make([]float64, t.Width)
	}
	for r := range t.Rows {
		row := v[r*t.Width : (r+1)*t.Width]
		for i, x := range row {
			e.sum[i] += float64(x)
		}
		e.lastRow = append(e.lastRow[:0], row...)
		e.rows++
	}
	return nil
}

// vector evaluates tokens from an empty cache and returns their pooled,
// L2-normalised hidden state (OpenAI's embeddings have unit length).
func (e *embedder) vector(ctx context.Context, tokens []int32) ([]float32, error) {
	if err := e.sess.Reset(); err != nil {
		return nil, err
	}
	clear(e.sum)
	e.rows = 0
	// Mean pooling needs every position's state: all rows through the
	// final norm (and, unavoidably, the output matmul); last pooling only
	// the last row, as a generation step computes.
	if _, err := e.sess.EvalContext(ctx, tokens, !e.last); err != nil {
		return nil, err
	}
	if e.rows == 0 {
		return nil, errors.New("embedding: the model reported no hidden state (is result_norm tapped?)")
	}
	out := make([]float32, len(e.sum))
	for i := range out {
		if e.last {
			out[i] = e.lastRow[i]
		} else {
			out[i] = float32(e.sum[i] / float64(e.rows))
		}
	}
	normalize(out)
	return out, nil
}

func normalize(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(ss))
	for i := range v {
		v[i] *= inv
	}
}

// embedPending runs one waiting embeddings request, if any (between
// steps, so generation and embeddings share the cores in turn).
func (s *Server) embedPending() {
	select {
	case e := <-s.embeds:
		s.embed(e)
	default:
	}
}

func (s *Server) embed(job *embedJob) {
	var res embedResult
	for _, in := range job.inputs {
		v, err := s.embedder.vector(job.ctx, in)
		if err != nil {
			res = embedResult{err: err}
			break
		}
		res.vectors = append(res.vectors, v)
	}
	job.done <- res
}

package serve

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/weft-ml/weft/chat"
	"github.com/weft-ml/weft/runtime"
	"github.com/weft-ml/weft/runtime/sample"
)

// readBody reads the (size-limited) body: too large is 413.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
			Message: fmt.Sprintf("request body over the server's limit of %d bytes", tooBig.Limit)}
	}
	if err != nil {
		return nil, badRequest("", "reading the body: %v", err)
	}
	return body, nil
}

// readRequest decodes a completion or chat request body.
func readRequest(r *http.Request) (*completionRequest, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	var req completionRequest
	if err := decodeJSON(body, &req); err != nil {
		return nil, err
	}
	return &req, nil
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) error {
	req, err := readRequest(r)
	if err != nil {
		return err
	}
	prompts, err := parsePrompt(req.Prompt, "prompt", false)
	if err != nil {
		return err
	}
	ids, err := s.promptTokens(prompts[0])
	if err != nil {
		return err
	}
	j, err := s.newJob(r, req, ids, nil)
	if err != nil {
		return err
	}
	return s.run(w, r, j, req.Stream, &textFormat{s: s, id: s.newID("cmpl-")})
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) error {
	req, err := readRequest(r)
	if err != nil {
		return err
	}
	if s.opts.Template == nil {
		return &apiError{Status: http.StatusNotImplemented, Type: "invalid_request_error",
			Message: fmt.Sprintf("this server has no chat template for the model (%v): use /v1/completions", s.chatErr)}
	}
	if len(req.Messages) == 0 {
		return badRequest("messages", "messages is required (a non-empty array)")
	}
	msgs := make([]chat.Message, len(req.Messages))
	for i, m := range req.Messages {
		if m.Role == "" {
			return badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d]: role is required", i)
		}
		text, err := m.text()
		if err != nil {
			return badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d]: %v", i, err)
		}
		msgs[i] = chat.Message{Role: m.Role, Content: text}
	}
	prompt, err := s.opts.Template.Render(msgs, true)
	if err != nil {
		return badRequest("messages", "chat template: %v", err)
	}
	ids, err := s.promptTokens(promptInput{text: prompt, isText: true})
	if err != nil {
		return err
	}
	j, err := s.newJob(r, req, ids, s.opts.Template.Stops())
	if err != nil {
		return err
	}
	return s.run(w, r, j, req.Stream, &chatFormat{s: s, id: s.newID("chatcmpl-")})
}

// promptTokens tokenizes a text prompt (BOS added where the model wants
// it, special-token text parsed, as llama-server does) or checks given ids.
func (s *Server) promptTokens(p promptInput) ([]int32, error) {
	tok := s.model.Tokenizer
	if !p.isText {
		for _, id := range p.tokens {
			if id < 0 || int(id) >= s.model.VocabSize() {
				return nil, badRequest("prompt", "token id %d outside the vocabulary [0, %d)", id, s.model.VocabSize())
			}
		}
		return p.tokens, nil
	}
	ids, err := tok.Encode(p.text, true, true)
	if err != nil {
		return nil, badRequest("prompt", "tokenizing the prompt: %v", err)
	}
	// A template that writes the BOS text itself, on a tokenizer that
	// adds one too, would start the prompt with two.
	if len(ids) > 1 && tok.AddBOS() && ids[0] == tok.BOS() && ids[1] == tok.BOS() {
		ids = ids[1:]
	}
	if len(ids) == 0 {
		return nil, badRequest("prompt", "the prompt is empty (no tokens)")
	}
	return ids, nil
}

// newJob validates the generation fields and builds the job.
func (s *Server) newJob(r *http.Request, req *completionRequest, prompt []int32, stops []string) (*job, error) {
	if req.N != nil && *req.N != 1 {
		return nil, badRequest("n", "n = %d: this server makes one choice per request (n = 1)", *req.N)
	}
	ctxLen := s.batcher.SlotContext()
	if len(prompt) > ctxLen {
		return nil, &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "prompt", Code: "context_length_exceeded",
			Message: fmt.Sprintf("the prompt has %d tokens, more than the context of %d tokens per request", len(prompt), ctxLen)}
	}
	maxTokens, err := s.maxTokens(req, len(prompt))
	if err != nil {
		return nil, err
	}
	params := samplingParams(req)
	if params.RepeatLastN == -1 { // llama.cpp's "the whole context"
		params.RepeatLastN = s.batcher.SlotContext()
	}
	if _, err := sample.New(params, s.model.VocabSize()); err != nil {
		return nil, badRequest("", "%v", err)
	}
	bias, err := parseLogitBias(req.LogitBias, s.model.VocabSize())
	if err != nil {
		return nil, err
	}
	own, err := parseStop(req.Stop)
	if err != nil {
		return nil, err
	}
	keep := s.opts.Keep
	if req.NKeep != nil {
		if keep = *req.NKeep; keep < -1 {
			return nil, badRequest("n_keep", "n_keep = %d: want -1 (the whole prompt) or a number of tokens", keep)
		}
	}
	tok := s.model.Tokenizer
	bos := len(prompt) > 0 && tok.AddBOS() && prompt[0] == tok.BOS()
	keep = runtime.KeepTokens(keep, len(prompt), bos, ctxLen)
	return &job{ctx: r.Context(), prompt: prompt, maxTokens: maxTokens, params: params, bias: bias,
		stops: append(own, stops...), ignoreEOS: req.IgnoreEOS, keep: keep, queued: time.Now(), out: newOutbox()}, nil
}

// maxTokens is the request's generation limit: what it asks, within the
// server's limit; by default the rest of the context.
func (s *Server) maxTokens(req *completionRequest, prompt int) (int, error) {
	ask := req.MaxTokens
	if ask == nil {
		ask = req.MaxCompletionTokens
	}
	if ask == nil {
		if s.opts.ContextShift {
			return s.opts.MaxTokens, nil
		}
		return min(s.opts.MaxTokens, s.batcher.SlotContext()-prompt+1), nil
	}
	if *ask < 1 || *ask > s.opts.MaxTokens {
		return 0, badRequest("max_tokens", "max_tokens = %d: want 1 to %d", *ask, s.opts.MaxTokens)
	}
	return *ask, nil
}

// samplingParams starts from llama.cpp's defaults (what llama-server
// users expect) and applies the request's fields. Without a seed each
// request draws its own.
func samplingParams(req *completionRequest) sample.Params {
	p := sample.DefaultParams()
	setF := func(dst *float32, v *float32) {
		if v != nil {
			*dst = *v
		}
	}
	setF(&p.Temp, req.Temperature)
	setF(&p.TopP, req.TopP)
	setF(&p.MinP, req.MinP)
	setF(&p.RepeatPenalty, req.RepeatPenalty)
	setF(&p.PresencePenalty, req.PresencePenalty)
	setF(&p.FrequencyPenalty, req.FrequencyPenalty)
	if req.TopK != nil {
		p.TopK = *req.TopK
	}
	if req.RepeatLastN != nil {
		p.RepeatLastN = *req.RepeatLastN
	}
	if req.Seed != nil {
		p.Seed = uint64(*req.Seed)
	} else {
		var b [8]byte
		rand.Read(b[:])
		p.Seed = binary.LittleEndian.Uint64(b[:])
	}
	return p
}

// submit queues j, or answers 503 when the queue is full or the server is
// shutting down.
func (s *Server) submit(j *job) error {
	if s.draining.Load() {
		return errShuttingDown
	}
	select {
	case s.queue <- j:
		s.metrics.queueDepth.Add(1)
		s.metrics.promptTokens.Add(uint64(len(j.prompt)))
		return nil
	default:
		return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "queue_full",
			Message: fmt.Sprintf("all %d slots are busy and %d requests wait: retry later", len(s.slots), cap(s.queue))}
	}
}

func (s *Server) newID(prefix string) string {
	return prefix + strconv.FormatUint(uint64(s.created), 36) + "-" + strconv.FormatUint(s.ids.Add(1), 36)
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) error {
	if s.embedder == nil {
		return errNotEmbedding
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var req embeddingRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" {
		return badRequest("encoding_format", "encoding_format %q: only float is supported", req.EncodingFormat)
	}
	prompts, err := parsePrompt(req.Input, "input", true)
	if err != nil {
		return err
	}
	job := &embedJob{ctx: r.Context(), done: make(chan embedResult, 1)}
	total := 0
	for _, p := range prompts {
		ids, err := s.promptTokens(p)
		if err != nil {
			return err
		}
		if len(ids) > s.batcher.SlotContext() {
			return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: "input", Code: "context_length_exceeded",
				Message: fmt.Sprintf("an input has %d tokens, more than the context of %d tokens", len(ids), s.batcher.SlotContext())}
		}
		job.inputs, total = append(job.inputs, ids), total+len(ids)
	}
	if s.draining.Load() {
		return errShuttingDown
	}
	select {
	case s.embeds <- job:
	default:
		return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "queue_full", Message: "too many embedding requests wait: retry later"}
	}
	var res embedResult
	select {
	case res = <-job.done:
	case <-r.Context().Done():
		return r.Context().Err()
	}
	if res.err != nil {
		return res.err
	}
	resp := embeddingResponse{Object: "list", Model: s.opts.ModelName, Usage: usage{PromptTokens: total, TotalTokens: total}}
	for i, v := range res.vectors {
		resp.Data = append(resp.Data, embeddingData{Object: "embedding", Index: i, Embedding: v})
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{{
		"id": s.opts.ModelName, "object": "model", "created": s.created, "owned_by": "weft",
		"meta": map[string]any{"n_ctx": s.batcher.SlotContext(), "n_vocab": s.model.VocabSize(), "slots": len(s.slots), "backend": s.model.Backend},
	}}})
	return nil
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	if s.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "shutting down"})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	s.metrics.write(w)
	s.metrics.request("metrics", http.StatusOK)
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var req tokenizeRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	addSpecial, parseSpecial := false, true
	if req.AddSpecial != nil {
		addSpecial = *req.AddSpecial
	}
	if req.ParseSpecial != nil {
		parseSpecial = *req.ParseSpecial
	}
	tok := s.model.Tokenizer
	ids, err := tok.Encode(req.Content, addSpecial, parseSpecial)
	if err != nil {
		return badRequest("content", "%v", err)
	}
	if !req.WithPieces {
		writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
		return nil
	}
	pieces := make([]tokenPiece, len(ids))
	for i, id := range ids {
		pieces[i] = tokenPiece{ID: id, Piece: string(tok.PieceSpecial(id))}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": pieces})
	return nil
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var req detokenizeRequest
	if err := decodeJSON(body, &req); err != nil {
		return err
	}
	for _, id := range req.Tokens {
		if id < 0 || int(id) >= s.model.VocabSize() {
			return badRequest("tokens", "token id %d outside the vocabulary [0, %d)", id, s.model.VocabSize())
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"content": s.model.Tokenizer.Decode(req.Tokens)})
	return nil
}

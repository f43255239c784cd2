package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// apiError is an error answered in OpenAI's shape with an HTTP status.
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   string `json:"param,omitempty"`
	Code    string `json:"code,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

// badRequest is a 400 about one request field ("" for the body).
func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Message: fmt.Sprintf(format, args...)}
}

// writeError answers err as OpenAI does: {"error": {...}}. Errors that are
// not apiErrors are the server's fault (500).
func writeError(w http.ResponseWriter, err error) {
	var e *apiError
	if !errors.As(err, &e) {
		e = &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
	}
	if e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1") // a slot frees within seconds
	}
	writeJSON(w, e.Status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// completionRequest holds the fields of /v1/completions and
// /v1/chat/completions that weft reads; others are ignored, as OpenAI
// clients send many (user, logprobs: false, …). Pointers tell "absent"
// from zero.
type completionRequest struct {
	Model               string             `json:"model"`
	Prompt              json.RawMessage    `json:"prompt"`
	Messages            []chatMessage      `json:"messages"`
	MaxTokens           *int               `json:"max_tokens"`
	MaxCompletionTokens *int               `json:"max_completion_tokens"` // OpenAI's newer name
	Temperature         *float32           `json:"temperature"`
	TopP                *float32           `json:"top_p"`
	TopK                *int               `json:"top_k"`
	MinP                *float32           `json:"min_p"`
	RepeatPenalty       *float32           `json:"repeat_penalty"`
	RepeatLastN         *int               `json:"repeat_last_n"`
	PresencePenalty     *float32           `json:"presence_penalty"`
	FrequencyPenalty    *float32           `json:"frequency_penalty"`
	Stop                json.RawMessage    `json:"stop"`
	Seed                *int64             `json:"seed"`
	Stream              bool               `json:"stream"`
	N                   *int               `json:"n"`
	LogitBias           map[string]float32 `json:"logit_bias"`
	IgnoreEOS           bool               `json:"ignore_eos"`
	NKeep               *int               `json:"n_keep"` // llama-server's: prompt tokens a context shift keeps besides BOS (-1: all)
}

// chatMessage is one message of a chat request. Content is a string or
// OpenAI's array of parts, of which the text parts are kept.
type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns the message's content as one string.
func (m chatMessage) text() (string, error) {
	c := bytes.TrimSpace(m.Content)
	if len(c) == 0 || string(c) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(c, &parts); err != nil {
		return "", errors.New("content must be a string or an array of {type: text, text} parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part of type %q: only text is supported", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// decodeJSON reads a request body into v; malformed JSON is a 400 that
// says where.
func decodeJSON(body []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return badRequest(te.Field, "field %q: expected %s, got a JSON %s", te.Field, te.Type, te.Value)
		}
		return badRequest("", "malformed JSON body: %v", err)
	}
	if d.More() {
		return badRequest("", "malformed JSON body: more than one value")
	}
	return nil
}

// promptInput is a prompt as OpenAI accepts it: text, or token ids, or a
// one-element array of either (n = 1: one prompt per request).
type promptInput struct {
	text   string
	tokens []int32
	isText bool
}

// parsePrompt reads the "prompt" (or embeddings "input") field. many
// allows several prompts (embeddings).
func parsePrompt(raw json.RawMessage, param string, many bool) ([]promptInput, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest(param, "%s is required", param)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []promptInput{{text: s, isText: true}}, nil
	}
	var ids []int32
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return []promptInput{{tokens: ids}}, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || len(list) == 0 {
		return nil, badRequest(param, "%s must be a string, an array of token ids, or an array of those", param)
	}
	if len(list) > 1 && !many {
		return nil, badRequest(param, "%s: %d prompts given; this server answers one prompt per request", param, len(list))
	}
	var out []promptInput
	for _, item := range list {
		if json.Unmarshal(item, &s) == nil {
			out = append(out, promptInput{text: s, isText: true})
			continue
		}
		if err := json.Unmarshal(item, &ids); err != nil || len(ids) == 0 {
			return nil, badRequest(param, "%s: each element must be a string or a non-empty array of token ids", param)
		}
		out = append(out, promptInput{tokens: ids})
	}
	return out, nil
}

// parseStop reads "stop": a string or an array of strings.
func parseStop(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []string{s}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest("stop", "stop must be a string or an array of strings")
	}
	if len(list) > maxStops {
		return nil, badRequest("stop", "stop: %d strings given, at most %d", len(list), maxStops)
	}
	out := list[:0]
	for _, x := range list {
		if x != "" {
			out = append(out, x)
		}
	}
	return out, nil
}

// maxStops bounds the stop strings of a request (OpenAI allows 4; more
// cost a scan of the text per token each).
const maxStops = 16

// parseLogitBias turns OpenAI's {"token id": bias} into ids, checking
// them against the vocabulary. A bias of -100 or less bans the token.
func parseLogitBias(m map[string]float32, vocab int) (map[int32]float32, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[int32]float32, len(m))
	for k, v := range m {
		id, err := strconv.Atoi(k)
		if err != nil || id < 0 || id >= vocab {
			return nil, badRequest("logit_bias", "logit_bias key %q: want a token id in [0, %d)", k, vocab)
		}
		if v != v || v < -100 || v > 100 {
			return nil, badRequest("logit_bias", "logit_bias[%s] = %g: want a number in [-100, 100]", k, v)
		}
		out[int32(id)] = v
	}
	return out, nil
}

// usage is OpenAI's token accounting.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type completionChoice struct {
	Text         string  `json:"text"`
	Index        int     `json:"index"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatChoice struct {
	Index        int        `json:"index"`
	Message      *chatDelta `json:"message,omitempty"`
	Delta        *chatDelta `json:"delta,omitempty"`
	Logprobs     any        `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *usage       `json:"usage,omitempty"`
}

type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
}

type embeddingData struct {
	Object    string    `json:"object"`
	Index     int       `json:"index"`
	Embedding []float32 `json:"embedding"`
}

type embeddingResponse struct {
	Object string          `json:"object"`
	Data   []embeddingData `json:"data"`
	Model  string          `json:"model"`
	Usage  usage           `json:"usage"`
}

type tokenizeRequest struct {
	Content      string `json:"content"`
	AddSpecial   *bool  `json:"add_special"`
	ParseSpecial *bool  `json:"parse_special"`
	WithPieces   bool   `json:"with_pieces"`
}

type tokenPiece struct {
	ID    int32  `json:"id"`
	Piece string `json:"piece"`
}

type detokenizeRequest struct {
	Tokens []int32 `json:"tokens"`
}

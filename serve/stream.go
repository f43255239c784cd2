package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// format shapes a job's output for one endpoint: OpenAI's text
// completions or chat completions, whole or as stream chunks.
type format interface {
	start() any                             // the first stream chunk, or nil
	chunk(text string) any                  // a stream chunk of text
	end(finish string, u usage) any         // the last stream chunk
	whole(text, finish string, u usage) any // the answer when not streaming
}

// run submits j and relays its events to the client. A client that goes
// away ends run; the scheduler sees the request's context done and frees
// the slot before its next step.
func (s *Server) run(w http.ResponseWriter, r *http.Request, j *job, stream bool, f format) error {
	if err := s.submit(j); err != nil {
		return err
	}
	if stream {
		return s.stream(w, r, j, f)
	}
	var text strings.Builder
	for {
		select {
		case <-j.out.notify:
		case <-r.Context().Done():
			return r.Context().Err()
		}
		for _, ev := range j.out.take() {
			switch {
			case ev.Err != nil:
				return ev.Err
			case ev.Done:
				writeJSON(w, http.StatusOK, f.whole(text.String(), ev.Finish, ev.Usage))
				return nil
			}
			text.WriteString(ev.Text)
		}
	}
}

// stream answers with Server-Sent Events: "data: {chunk}" per piece of
// text, the finish reason and usage in the last chunk, then
// "data: [DONE]". An error after the headers went out is sent as a
// chunk {"error": {...}}.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, j *job, f format) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold the stream back
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err // the client is gone: its context ends too
		}
		return nil
	}
	if first := f.start(); first != nil {
		send(first)
	}
	for {
		if flusher != nil {
			flusher.Flush()
		}
		select {
		case <-j.out.notify:
		case <-r.Context().Done():
			return nil
		}
		for _, ev := range j.out.take() {
			var err error
			switch {
			case ev.Err != nil:
				send(map[string]any{"error": asAPIError(ev.Err)})
				return nil
			case ev.Done:
				if err = send(f.end(ev.Finish, ev.Usage)); err == nil {
					_, err = fmt.Fprint(w, "data: [DONE]\n\n")
				}
				if flusher != nil {
					flusher.Flush()
				}
				return nil
			case ev.Text != "":
				err = send(f.chunk(ev.Text))
			}
			if err != nil {
				return nil
			}
		}
	}
}

// textFormat is /v1/completions.
type textFormat struct {
	s  *Server
	id string
}

func (f *textFormat) resp(text string, finish *string, u *usage) completionResponse {
	return completionResponse{ID: f.id, Object: "text_completion", Created: f.s.created, Model: f.s.opts.ModelName,
		Choices: []completionChoice{{Text: text, FinishReason: finish}}, Usage: u}
}

func (f *textFormat) start() any            { return nil }
func (f *textFormat) chunk(text string) any { return f.resp(text, nil, nil) }
func (f *textFormat) end(finish string, u usage) any {
	return f.resp("", &finish, &u)
}
func (f *textFormat) whole(text, finish string, u usage) any { return f.resp(text, &finish, &u) }

// chatFormat is /v1/chat/completions.
type chatFormat struct {
	s  *Server
	id string
}

func (f *chatFormat) resp(object string, c chatChoice, u *usage) chatResponse {
	return chatResponse{ID: f.id, Object: object, Created: f.s.created, Model: f.s.opts.ModelName, Choices: []chatChoice{c}, Usage: u}
}

func (f *chatFormat) start() any {
	empty := ""
	return f.resp("chat.completion.chunk", chatChoice{Delta: &chatDelta{Role: "assistant", Content: &empty}}, nil)
}

func (f *chatFormat) chunk(text string) any {
	return f.resp("chat.completion.chunk", chatChoice{Delta: &chatDelta{Content: &text}}, nil)
}

func (f *chatFormat) end(finish string, u usage) any {
	return f.resp("chat.completion.chunk", chatChoice{Delta: &chatDelta{}, FinishReason: &finish}, &u)
}

func (f *chatFormat) whole(text, finish string, u usage) any {
	return f.resp("chat.completion", chatChoice{Message: &chatDelta{Role: "assistant", Content: &text}, FinishReason: &finish}, &u)
}

// asAPIError gives any error OpenAI's shape.
func asAPIError(err error) *apiError {
	if e, ok := err.(*apiError); ok {
		return e
	}
	return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: err.Error()}
}

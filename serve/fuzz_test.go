package serve

import (
	"testing"
)

// FuzzDecodeRequest feeds arbitrary bodies through the request decoding
// and validation that every completion runs before the scheduler sees
// it: it must answer with an error or a request, never panic.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"prompt": "Once", "max_tokens": 4, "temperature": 0}`,
		`{"prompt": [1, 2, 3], "stop": ["a", "b"], "logit_bias": {"5": -100}}`,
		`{"prompt": ["x"], "n": 1, "seed": -3, "top_k": 5, "min_p": 0.1}`,
		`{"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "stream": true}`,
		`{"prompt": "x", "max_tokens": "ten"}`,
		`{"input": [[1, 2], "text"]}`,
		`{`, `[]`, `null`, `{"stop": null, "prompt": null}`,
	} {
		f.Add([]byte(seed))
	}
	const vocab = 512
	f.Fuzz(func(t *testing.T, body []byte) {
		var req completionRequest
		if decodeJSON(body, &req) != nil {
			return
		}
		parsePrompt(req.Prompt, "prompt", false)
		parseStop(req.Stop)
		parseLogitBias(req.LogitBias, vocab)
		samplingParams(&req)
		for _, m := range req.Messages {
			m.text()
		}
		var e embeddingRequest
		if decodeJSON(body, &e) == nil {
			parsePrompt(e.Input, "input", true)
		}
	})
}

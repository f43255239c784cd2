// Package runtime loads compiled plans (or GGUF files directly) and runs
// them: sessions with their own KV cache, batched prefill, decode,
// sampling and streaming text.
//
// A Model is read-only once loaded and may be shared by any number of
// Sessions in different goroutines; each Session owns its activation
// buffers and KV cache. A Batcher holds the KV caches of several
// sequences (a server's slots) and runs the new tokens of all of them in
// one graph evaluation per step (continuous batching).
//
//	m, _ := runtime.Open("model.plan", runtime.Options{})
//	s, _ := m.NewSession(runtime.SessionOptions{})
//	res, _ := s.Generate(ctx, "Once upon a time", runtime.GenerateOptions{MaxTokens: 32}, onToken)
package runtime

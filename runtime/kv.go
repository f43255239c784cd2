package runtime

// KVBytes is the memory the session's KV cache holds on its backend, in
// the cache type's real bytes (Q8_0 and Q4_0 blocks included); 0 once
// the session is closed.
func (s *Session) KVBytes() int64 { return s.st.KVBytes() }

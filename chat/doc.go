// Package chat turns a conversation into the prompt text a chat model was
// trained on.
//
// A Template comes from the model file (FromModel: the GGUF's
// tokenizer.chat_template, a Jinja template), from a built-in set of known
// formats (Named: "chatml", "llama-2", "llama-3", "phi-3", "gemma",
// "mistral", …), or from Jinja source of your own (Parse). FromModel falls
// back to a known format, chosen from the vocabulary and the architecture,
// when the file has no template, and says which in Name.
//
// Render follows llama.cpp: Jinja templates run with trim_blocks and
// lstrip_blocks (and llama.cpp's renderer's habit of also stripping the
// blanks that start a line before a {{ … }}); a template that ignores
// system messages gets them merged into the next user message; the text is
// returned without a leading BOS or a trailing EOS, since the tokenizer adds
// BOS itself and a prompt must not end in EOS. Tokenize the result with
// special-token parsing on.
//
// Templates come from untrusted files: rendering is bounded in steps,
// nesting and output size, and every failure is an error, never a panic.
package chat

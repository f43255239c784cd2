// Package jinja is a small interpreter for the subset of Jinja2 that chat
// templates use: text with {{ expressions }}, {% if/for/set/macro %}
// statements, filters, tests, Python-style methods on strings, lists and
// dicts, namespace(), loop variables and slicing.
//
// It exists because chat templates come from model files, that is from
// anyone: rendering must end in bounded time and memory and fail with an
// error, never a panic or a crash (docs/decisions.md, "Chat templates"
// records why no existing Go engine was used). Every evaluation step,
// every byte of output and of built values, and the nesting of the
// template and of macro calls are counted against Limits.
//
// Whitespace follows llama.cpp's renderer, which is what GGUF users
// compare with: trim_blocks and lstrip_blocks on (lstrip also before
// {{ … }}, as llama.cpp does), keep_trailing_newline off. Undefined values
// are lenient: a missing key or attribute is undefined, printing as "" and
// testing false, and so is an attribute of undefined; calling or iterating
// one is an error.
package jinja

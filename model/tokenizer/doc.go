// Package tokenizer turns text into token ids and back, exactly as llama.cpp
// (commit c392e5094) does for the vocabularies stored in GGUF metadata.
//
// FromGGUF reads the tokenizer.ggml.* keys and builds one of two families:
//
//   - model "llama": SentencePiece-style. The text gets a leading space
//     (add_space_prefix), spaces become U+2581, and adjacent symbols are
//     merged by highest token score (a heap, ties to the leftmost pair);
//     characters that form no token fall back to <0xXX> byte tokens.
//   - model "gpt2": byte-level BPE. A pre-tokenizer chosen by
//     tokenizer.ggml.pre splits the text into words, each word's bytes are
//     merged by lowest merge rank (a heap, ties to the leftmost pair).
//
// Pre-tokenizers. llama.cpp describes each family by regular expressions,
// two of which it runs through hand-written code and the rest through
// std::regex over a "collapsed" text in which every non-ASCII code point is
// replaced by one byte for its Unicode category. Go's regexp has no
// look-ahead (\s+(?!\S)) and is slow for this hot path, so every splitter
// here is written by hand over code point classes: the GPT-2 and Llama-3
// splitters follow llama.cpp's custom code step by step, and the remaining
// patterns ([\p{P}...]+, \s?\p{L}+, \p{N}, [0-9]{3}, \s+$ ...) are small
// leftmost-first scanners that reproduce what std::regex matches on the
// collapsed text (only ASCII whitespace and non-ASCII White_Space code
// points count as \s; a non-ASCII code point belongs to \p{L}, \p{N} or
// \p{P} only through its general category). Unicode categories come from
// Go's unicode tables. Families whose patterns need more (deepseek-v3,
// tekken, chameleon) are reported as unsupported.
//
// Special tokens. Control, user-defined and unknown tokens are matched in
// the raw text before tokenization, longest first (ties by id); with
// parseSpecial false only user-defined tokens are matched, as in llama.cpp.
//
// Invalid UTF-8. SPM input is split by the lead byte's declared length and
// every byte of a symbol that forms no token becomes its <0xXX> byte token
// (UNK if the vocabulary has none), so no byte is lost. BPE input is decoded
// the way llama.cpp decodes it: each byte that does not start a well-formed
// sequence becomes U+FFFD, which is then tokenized like any other character.
// Neither path returns an error or panics for any input.
//
// Decoding. Piece renders one token like llama_token_to_piece (control and
// unknown tokens render empty unless PieceSpecial is used); Decode joins
// pieces byte for byte; StreamDecoder releases text only at UTF-8 character
// boundaries so a character split across tokens is never emitted in halves.
package tokenizer

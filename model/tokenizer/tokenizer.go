package tokenizer

// Kind is the tokenizer family named by tokenizer.ggml.model.
type Kind int

const (
	// SPM is SentencePiece-style tokenization (model "llama").
	SPM Kind = iota
	// BPE is byte-level BPE (model "gpt2").
	BPE
)

func (k Kind) String() string {
	if k == SPM {
		return "spm"
	}
	return "bpe"
}

// attr is llama.cpp's token attribute bit set.
type attr uint16

const (
	attrUnknown attr = 1 << iota
	attrUnused
	attrNormal
	attrControl
	attrUserDefined
	attrByte
	attrNormalized
	attrLStrip
	attrRStrip
)

// attrFromType maps a GGUF token_type value to attributes; values outside
// the known set are undefined (attribute 0), which renders as empty text.
func attrFromType(t int32) attr {
	switch t {
	case 1:
		return attrNormal
	case 2:
		return attrUnknown
	case 3:
		return attrControl
	case 4:
		return attrUserDefined
	case 5:
		return attrUnused
	case 6:
		return attrByte
	}
	return 0
}

// noToken marks an absent special token (llama.cpp's LLAMA_TOKEN_NULL).
const noToken int32 = -1

// fimIDs are the fill-in-the-middle token ids (noToken when absent).
type fimIDs struct{ pre, suf, mid, pad, rep, sep int32 }

type token struct {
	text  string
	score float32
	attr  attr
}

// Tokenizer encodes and decodes text for one vocabulary. It is immutable
// after FromGGUF and safe for concurrent use.
type Tokenizer struct {
	kind   Kind
	pre    string
	tokens []token
	byText map[string]int32 // token text -> id; a repeated text keeps its last id

	bos, eos, eot, eom, unk, sep, pad int32
	fim                               fimIDs
	addBOS, addEOS, addSpacePrefix    bool

	eog      map[int32]bool
	specials []int32  // control, user-defined and unknown ids, longest text first
	pieces   [][]byte // rendering of every id with special=true

	spmBytes    [256]int32 // SPM byte-fallback token per byte (noToken if none)
	spmWordCuts bool       // SPM text may be merged word by word (see wordBoundaries)
	bpe         *bpeModel
}

// Kind reports the tokenizer family.
func (t *Tokenizer) Kind() Kind { return t.kind }

// Pre reports the pre-tokenizer name in use ("" for SPM).
func (t *Tokenizer) Pre() string { return t.pre }

// VocabSize is the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// BOS is the beginning-of-sequence id, or -1 if the vocabulary has none.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS is the end-of-sequence id, or -1 if the vocabulary has none.
func (t *Tokenizer) EOS() int32 { return t.eos }

// UNK is the unknown-token id, or -1 if the vocabulary has none.
func (t *Tokenizer) UNK() int32 { return t.unk }

// PAD is the padding id, or -1 if the vocabulary has none.
func (t *Tokenizer) PAD() int32 { return t.pad }

// AddBOS reports whether Encode with addSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether Encode with addSpecial appends EOS.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// IsEOG reports whether id ends generation (EOS, EOT, EOM and the
// end-of-turn tokens llama.cpp recognises by their text).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// IsControl reports whether id is a control token.
func (t *Tokenizer) IsControl(id int32) bool {
	return t.valid(id) && t.tokens[id].attr&attrControl != 0
}

// Text returns the stored text of id (as in the vocabulary, not rendered).
func (t *Tokenizer) Text(id int32) string {
	if !t.valid(id) {
		return ""
	}
	return t.tokens[id].text
}

// ID returns the id whose stored text is s.
func (t *Tokenizer) ID(s string) (int32, bool) {
	id, ok := t.byText[s]
	return id, ok
}

func (t *Tokenizer) valid(id int32) bool { return id >= 0 && int(id) < len(t.tokens) }

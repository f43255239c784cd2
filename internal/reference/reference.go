package reference

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// Reference is the part of a ../shared/reference JSON file the tests use.
type Reference struct {
	Model          string        `json:"model"`
	Prompt         string        `json:"prompt"`
	PromptTokens   []int32       `json:"prompt_tokens"`
	NVocab         int           `json:"n_vocab"`
	GreedyTokens   []int32       `json:"greedy_tokens"`
	GreedyTextHex  string        `json:"greedy_text_hex"`
	GreedyTopK     [][][]float64 `json:"greedy_topk"`
	PromptTopK     [][][]float64 `json:"prompt_topk"`
	LogitsFile     string        `json:"logits_file"`
	LogitsShape    []int         `json:"logits_shape"`
	LogitsFirstPos int           `json:"logits_first_pos"`
	KVType         string        `json:"kv_cache_type"`

	// Context-shift references (testdata/shift): the context, the tokens
	// kept, each shift, the position every greedy token was fed at and
	// the greedy steps whose logits the file stores (then Row(i) is the
	// row of step LogitsSteps[i]).
	NCtx            int       `json:"n_ctx"`
	NKeep           int       `json:"n_keep"`
	Shifts          []Shift   `json:"shifts"`
	GreedyPositions []int     `json:"greedy_positions"`
	GreedyLogSumExp []float64 `json:"greedy_logsumexp"`
	LogitsSteps     []int     `json:"logits_steps"`

	Logits []float32 `json:"-"` // the stored rows, [LogitsShape[0]][NVocab]
}

// Shift is one context shift of a context-shift reference: made before
// the greedy token of Step was fed, at NPast tokens, discarding NDiscard
// after the first NKeep.
type Shift struct {
	Step     int `json:"step"`
	NPast    int `json:"n_past"`
	NKeep    int `json:"n_keep"`
	NDiscard int `json:"n_discard"`
}

// StepRow returns the stored logits of greedy step g of a context-shift
// reference, or nil.
func (r *Reference) StepRow(g int) []float32 {
	for i, s := range r.LogitsSteps {
		if s == g {
			return r.Logits[i*r.NVocab : (i+1)*r.NVocab]
		}
	}
	return nil
}

// Load reads dir/name and its logits file.
func Load(t testing.TB, dir, name string) *Reference {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	var r Reference
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, r.LogitsFile))
	if err != nil {
		t.Fatal(err)
	}
	r.Logits = make([]float32, len(raw)/4)
	for i := range r.Logits {
		r.Logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	if len(r.LogitsShape) != 2 || len(r.Logits) != r.LogitsShape[0]*r.LogitsShape[1] {
		t.Fatalf("%s: %d logits, shape %v", name, len(r.Logits), r.LogitsShape)
	}
	return &r
}

// Row returns the stored logits of prompt position pos, or nil.
func (r *Reference) Row(pos int) []float32 {
	i := pos - r.LogitsFirstPos
	if i < 0 || i >= r.LogitsShape[0] {
		return nil
	}
	return r.Logits[i*r.NVocab : (i+1)*r.NVocab]
}

// RelDiff returns ‖a-b‖/‖b‖ and max |a-b|.
func RelDiff(a, b []float32) (rel, maxAbs float64) {
	var num, den float64
	for i := range b {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
		maxAbs = math.Max(maxAbs, math.Abs(d))
	}
	return math.Sqrt(num / den), maxAbs
}

// Argmax is the greedy token of a logits row.
func Argmax(l []float32) int32 {
	best := 0
	for i, v := range l {
		if v > l[best] {
			best = i
		}
	}
	return int32(best)
}

// Top5 returns the ids of the five largest logits, largest first.
func Top5(l []float32) []int {
	idx := make([]int, len(l))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return l[idx[a]] > l[idx[b]] })
	return idx[:5]
}

// Overlap counts the ids of ours among the reference's top-k entries
// ([id, logit] pairs).
func Overlap(ours []int, ref [][]float64) int {
	n := 0
	for _, id := range ours {
		for _, e := range ref {
			if int(e[0]) == id {
				n++
			}
		}
	}
	return n
}

// Spread is llama.cpp's own f16-KV versus f32-KV disagreement: the largest
// per-row ‖Δ‖/‖ref‖ over the stored rows of a reference pair.
func Spread(f16, f32 *Reference) float64 {
	s := 0.0
	for r := 0; r < f16.LogitsShape[0]; r++ {
		pos := f16.LogitsFirstPos + r
		rel, _ := RelDiff(f16.Row(pos), f32.Row(pos))
		s = math.Max(s, rel)
	}
	return s
}

// Bar is the acceptance bound on a row's ‖Δ‖/‖ref‖: max(2e-3, 2·spread).
func Bar(spread float64) float64 { return math.Max(2e-3, 2*spread) }

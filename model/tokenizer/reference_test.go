package tokenizer

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// refRun holds the fields of a llama.cpp reference JSON that concern the
// tokenizer.
type refRun struct {
	Model        string   `json:"model"`
	Prompt       string   `json:"prompt"`
	PromptTokens []int32  `json:"prompt_tokens"`
	PromptPieces []string `json:"prompt_pieces"`
	GreedyTokens []int32  `json:"greedy_tokens"`
	GreedyHex    []string `json:"greedy_pieces_hex"`
	GreedyText   string   `json:"greedy_text_hex"`
	TextSpecial  string   `json:"greedy_text_special"`
}

func TestReferencePromptsAndPieces(t *testing.T) {
	dir := filepath.Join(sharedDir(t), "reference")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no reference JSON files in %s (%v)", dir, err)
	}
	if len(files) != 42 {
		t.Errorf("found %d reference JSON files, want 42 (7 models × 3 prompts, f16 and f32 KV)", len(files))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var r refRun
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			checkReference(t, loadTokenizer(t, filepath.Join("models", r.Model)), &r)
		})
	}
}

func checkReference(t *testing.T, tk *Tokenizer, r *refRun) {
	got, err := tk.Encode(r.Prompt, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, r.PromptTokens) {
		t.Errorf("prompt tokens:\n got %v\nwant %v", got, r.PromptTokens)
	}
	for i, id := range r.PromptTokens {
		if i < len(r.PromptPieces) && string(tk.PieceSpecial(id)) != r.PromptPieces[i] {
			t.Errorf("prompt piece %d (id %d) = %q, want %q", i, id, tk.PieceSpecial(id), r.PromptPieces[i])
		}
	}
	if len(r.GreedyHex) != len(r.GreedyTokens) {
		t.Fatalf("%d greedy pieces for %d tokens", len(r.GreedyHex), len(r.GreedyTokens))
	}
	for i, id := range r.GreedyTokens {
		if h := hex.EncodeToString(tk.Piece(id)); h != r.GreedyHex[i] {
			t.Errorf("greedy piece %d (id %d) = %s, want %s", i, id, h, r.GreedyHex[i])
		}
	}
	if h := hex.EncodeToString([]byte(tk.Decode(r.GreedyTokens))); h != r.GreedyText {
		t.Errorf("greedy text hex = %s, want %s", h, r.GreedyText)
	}
	var special []byte
	for _, id := range r.GreedyTokens {
		special = append(special, tk.PieceSpecial(id)...)
	}
	if string(special) != r.TextSpecial {
		t.Errorf("greedy text (special) = %q, want %q", special, r.TextSpecial)
	}
}

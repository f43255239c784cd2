// Command residualnorm taps a llama model's residual stream (the output
// of every layer, blk.N.l_out) and prints its L2 norm for each token of a
// prompt, layer by layer.
//
//	go run ./examples/residualnorm [-model testdata/stories260K.gguf] [-prompt TEXT]
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/weft-ml/weft/runtime"
)

func main() {
	model := flag.String("model", "testdata/stories260K.gguf", "a GGUF model or plan")
	prompt := flag.String("prompt", "Once upon a time", "prompt")
	flag.Parse()
	if err := run(os.Stdout, *model, *prompt); err != nil {
		fmt.Fprintln(os.Stderr, "residualnorm:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, model, prompt string) error {
	// The embeddings and every layer's residual output. l_out is fused
	// into the FFN's down projection ("blk.N.ffn_out+l_out"); the tap
	// pattern finds it by the name of the node the fusion replaced.
	m, err := runtime.Open(model, runtime.Options{Taps: "inp_embd,blk.*.l_out"})
	if err != nil {
		return err
	}
	defer m.Close()
	var rows [][]float64 // [layer+1][token]
	var names []string
	s, err := m.NewSession(runtime.SessionOptions{Tap: func(t runtime.TapInfo, v []float32) error {
		norms := make([]float64, t.Rows)
		for r := range norms {
			var sum float64
			for _, x := range v[r*t.Width : (r+1)*t.Width] {
				sum += float64(x) * float64(x)
			}
			norms[r] = math.Sqrt(sum)
		}
		rows, names = append(rows, norms), append(names, t.Name)
		return nil
	}})
	if err != nil {
		return err
	}
	ids, err := m.Tokenizer.Encode(prompt, true, false)
	if err != nil {
		return err
	}
	if _, err := s.Eval(ids, false); err != nil {
		return err
	}
	fmt.Fprintf(w, "%-22s", "token:")
	for _, id := range ids {
		piece := strings.TrimSpace(string(m.Tokenizer.Piece(id)))
		if piece == "" {
			piece = fmt.Sprintf("#%d", id) // BOS
		}
		fmt.Fprintf(w, " %8s", piece)
	}
	fmt.Fprintln(w)
	for i, norms := range rows {
		fmt.Fprintf(w, "%-22s", names[i])
		for _, x := range norms {
			fmt.Fprintf(w, " %8.2f", x)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// Command customact registers an activation of its own (SiLU written in
// Go), swaps it into a llama model with a pass of its own, and tells a
// story with it beside the built-in one.
//
//	go run ./examples/customact [-model testdata/stories260K.gguf] [-prompt TEXT] [-n 32]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/passes"
	"github.com/weft-ml/weft/runtime"
	"github.com/weft-ml/weft/runtime/sample"
)

func main() {
	model := flag.String("model", "testdata/stories260K.gguf", "a llama-family GGUF model")
	prompt := flag.String("prompt", "Once upon a time", "prompt")
	n := flag.Int("n", 32, "tokens to generate")
	flag.Parse()
	if err := run(os.Stdout, *model, *prompt, *n); err != nil {
		fmt.Fprintln(os.Stderr, "customact:", err)
		os.Exit(1)
	}
}

// goSiLU is x·σ(x), computed in Go: each call (one per thread) takes its
// span of the rows.
func goSiLU(c *ops.Call) error {
	lo, hi := c.Span(c.Out.Rows)
	for r := lo; r < hi; r++ {
		y := c.Out.Row(r)
		for i, x := range c.In[0].Row(r) {
			y[i] = x / (1 + float32(math.Exp(float64(-x))))
		}
	}
	return nil
}

// unary is the type inference of an elementwise op: its operand's type.
func unary(in []graph.Type, _ graph.Attrs) (graph.Type, error) {
	if in[0].DType != graph.F32 || len(in[0].Shape) != 2 {
		return graph.Type{}, fmt.Errorf("want an F32 matrix, got %s", in[0])
	}
	return in[0], nil
}

// swap is the user pass: every SiLU becomes GoSiLU. It runs before the
// fusions, which then leave the custom op alone.
var swap = passes.New("go-silu", func(g *graph.Graph) (passes.Change, error) {
	var c passes.Change
	for _, n := range g.Nodes {
		if n.Op == ops.SiLU {
			n.Op = "GoSiLU"
			c.Count++
			c.Details = append(c.Details, n.Name)
		}
	}
	return c, nil
})

func run(w io.Writer, model, prompt string, n int) error {
	if err := ops.Register(ops.Custom{Name: "GoSiLU", Arity: 1, Infer: unary, InPlace: []int{0}, CPU: goSiLU}); err != nil {
		return err
	}
	custom, err := story(model, prompt, n, []passes.Insertion{{Pass: swap, Before: "fuse-gateup"}}, w)
	if err != nil {
		return err
	}
	builtin, err := story(model, prompt, n, nil, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "with GoSiLU: %s%s\n", prompt, custom)
	fmt.Fprintf(w, "same story as the built-in SiLU: %v\n", custom == builtin)
	return nil
}

// story generates greedily from model compiled with the extra passes,
// saying on log what they did.
func story(model, prompt string, n int, extra []passes.Insertion, log io.Writer) (string, error) {
	m, err := runtime.Open(model, runtime.Options{Compile: runtime.CompileOptions{Insert: extra}})
	if err != nil {
		return "", err
	}
	defer m.Close()
	for _, e := range m.Plan.Passes {
		if log != nil && e.Name == "go-silu" {
			fmt.Fprintf(log, "pass %s swapped %d activations (%s … %s)\n", e.Name, e.Count, e.Details[0], e.Details[len(e.Details)-1])
		}
	}
	s, err := m.NewSession(runtime.SessionOptions{})
	if err != nil {
		return "", err
	}
	res, err := s.Generate(context.Background(), prompt, runtime.GenerateOptions{MaxTokens: n, Sampling: sample.Params{Temp: 0}}, nil)
	if err != nil {
		return "", err
	}
	return res.Text, nil
}

package runtime_test

import (
	"context"
	"fmt"
	"log"

	"github.com/weft-ml/weft/runtime"
	"github.com/weft-ml/weft/runtime/sample"
)

// Open a model (a .plan from graphc compile, or a .gguf compiled in
// memory), start a session and generate greedily.
func Example() {
	m, err := runtime.Open("../testdata/stories260K.gguf", runtime.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession(runtime.SessionOptions{})
	if err != nil {
		log.Fatal(err)
	}
	opts := runtime.GenerateOptions{MaxTokens: 12, Sampling: sample.Params{Temp: 0}}
	res, err := s.Generate(context.Background(), "Once upon a time", opts, func(id int32, text string) error {
		return nil // stream text here
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text)
	// Output: , there was a little girl named Lily. She
}

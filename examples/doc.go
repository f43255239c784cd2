// Package examples holds runnable programs that use weft as a library;
// each folder is one, run from the repository root:
//
//	go run ./examples/customact      # a custom activation swapped into a llama model by a user pass
//	go run ./examples/mlp            # a small non-LLM graph (an MLP) built and run from Go slices
//	go run ./examples/residualnorm   # a tap printing each layer's residual-stream norm for a prompt
//
// examples_test.go runs each with go run, as CI does.
package examples

// Package graph is weft's intermediate representation: a static dataflow
// graph of typed nodes with ordered inputs.
//
// Shapes are written outermost dimension first (row-major, like NumPy):
// an activation of T tokens by D features is [T, D]; a weight matrix with N
// output rows of K inputs is [N, K]. (GGUF lists dimensions innermost first;
// the lowering converts.) Dimensions may be symbolic: "T" is the number of
// tokens in the batch and "R" the number of output rows; they are bound when
// the graph runs, so one graph serves prefill and decode.
//
// The op catalogue lives in package ops, which registers each op's shape
// inference here with Register; Verify uses the registry, so custom ops are
// checked the same way as built-in ones.
package graph

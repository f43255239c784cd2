// Package backends is the contract between the compiler and runtime and
// the devices that run graph nodes. A backend says what it can run
// (Supports, with the reason when it cannot), may offer weight layouts for
// its kernels (LayoutProvider), and, to execute, loads the nodes placed on
// it into a Program: weights uploaded or mapped once per model, one
// activation arena from the memory plan. A Program makes a State per
// session, which owns that session's KV cache and runs one batch at a
// time. A State may hold several independent sequences (StateOptions.Seqs,
// continuous batching): each token of a Batch names its sequence, writes
// its K and V into that sequence's cells and attends to them only
// (CheckBatch says which batches are valid).
//
// Backends register themselves (Register) from their package's init;
// backends/all imports every built-in backend, so adding one is a new
// folder plus one import line there. The runtime and the passes talk only
// to this package, never to a backend's own types. backends/backendtest
// is the conformance suite every backend must pass.
package backends

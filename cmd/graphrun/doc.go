// Command graphrun runs a compiled weft plan (or a GGUF model directly):
// it streams generated text to stdout and a summary to stderr, and
// benchmarks prefill and decode.
//
//	graphrun MODEL.plan --prompt "Once upon a time" -n 64
//	graphrun bench MODEL.plan -p 512 -n 128 -r 5 [--threads N] [--bandwidth] [--json] [--profile] [--profile-out P.json]
//	graphrun chat MODEL.plan [--template NAME|FILE] [--system TEXT]
//
// SIGINT (Ctrl-C) or SIGTERM stops a run between two batches of the prompt
// or two generated tokens, within a fraction of a second: it still prints
// the text so far, the --json object (stop_reason "cancelled") and the
// summary, then exits with status 130 (SIGINT) or 143 (SIGTERM). A second
// signal exits at once. graphrun bench likewise stops between runs and
// prints the runs completed. Other exit statuses: 0 done, 1 error, 2 usage.
//
// graphrun chat is interactive: there Ctrl-C stops the reply being written
// and the chat goes on; Ctrl-D (the end of the input) or /bye exits with
// status 0, SIGTERM with 143 after the current reply.
package main

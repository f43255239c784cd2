// Package apilist lists weft's exported Go surface: every exported
// function, method, type, struct field, interface method, constant and
// variable of the packages outside internal/ and the commands, one line
// each, sorted. The listing is checked in as api.txt at the repository
// root and a test compares it with the tree, so the library's surface
// changes only on purpose (the Go project's api/ files serve the same
// end). `make api` rewrites api.txt after a deliberate change.
//
// Declarations are read from the source with go/ast for linux/amd64's
// default build (no tags), so the listing does not depend on the machine
// running the test. Signatures are printed as written, parameter names
// included: renaming a parameter shows in the diff, which is cheap to
// accept and keeps the tool small.
package apilist

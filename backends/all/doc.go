// Package all registers every built-in backend. Importing it (as runtime
// does) makes them available to backends.Lookup; a new backend adds one
// import line here (all.go).
package all

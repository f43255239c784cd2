// Package testenv locates test fixtures shared between packages: the
// repository root and the ../shared folder beside it.
package testenv

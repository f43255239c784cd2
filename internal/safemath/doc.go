// Package safemath does the size arithmetic of plans and sessions without
// wrapping: every product or sum of sizes (elements, bytes, offsets) that
// comes from a file, a flag or a model's shape goes through Mul and Add,
// and a result that does not fit is an error for the caller to report,
// never a small number that a later allocation or slice expression trusts.
//
// Sizes are never negative, so a negative operand is refused like an
// overflow.
package safemath

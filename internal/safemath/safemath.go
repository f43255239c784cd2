package safemath

import (
	"fmt"
	"math"
	"math/bits"
)

// Mul returns a·b and true, or 0 and false when either is negative or the
// product does not fit an int64.
func Mul(a, b int64) (int64, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}

// Add returns a+b and true, or 0 and false when either is negative or the
// sum does not fit an int64.
func Add(a, b int64) (int64, bool) {
	if a < 0 || b < 0 || a > math.MaxInt64-b {
		return 0, false
	}
	return a + b, true
}

// Product multiplies non-negative factors (1 for none).
func Product(xs ...int64) (int64, bool) {
	p := int64(1)
	for _, x := range xs {
		var ok bool
		if p, ok = Mul(p, x); !ok {
			return 0, false
		}
	}
	return p, true
}

// Sum adds non-negative terms.
func Sum(xs ...int64) (int64, bool) {
	s := int64(0)
	for _, x := range xs {
		var ok bool
		if s, ok = Add(s, x); !ok {
			return 0, false
		}
	}
	return s, true
}

// Int converts a non-negative int64 to int, false when it does not fit
// (on 32-bit platforms) or is negative.
func Int(x int64) (int, bool) {
	if x < 0 || x > math.MaxInt {
		return 0, false
	}
	return int(x), true
}

// Calc chains size arithmetic and remembers the first overflow, so a
// formula reads as one expression checked once:
//
//	var c safemath.Calc
//	kv := c.Mul(c.Mul(ctx, layers), width)
//	if c.Overflow() { … }
//
// Once a step overflows, every later result is 0 and Overflow stays true.
type Calc struct{ bad bool }

// Mul is Mul, recorded in c.
func (c *Calc) Mul(a, b int64) int64 {
	if c.bad {
		return 0
	}
	r, ok := Mul(a, b)
	c.bad = !ok
	return r
}

// Add is Add, recorded in c.
func (c *Calc) Add(a, b int64) int64 {
	if c.bad {
		return 0
	}
	r, ok := Add(a, b)
	c.bad = !ok
	return r
}

// Overflow reports whether any step so far overflowed or had a negative
// operand.
func (c *Calc) Overflow() bool { return c.bad }

// Bytes formats a byte count for messages: "512 B", "3.0 KiB", "42.0 GiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	x, i := float64(n)/unit, 0
	for x >= unit && i < 5 {
		x /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", x, "KMGTPE"[i])
}

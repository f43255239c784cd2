package safemath

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMulAdd(t *testing.T) {
	for _, c := range []struct {
		a, b  int64
		mul   int64
		mulOK bool
		add   int64
		addOK bool
		name  string
	}{
		{0, 0, 0, true, 0, true, "zeros"},
		{3, 7, 21, true, 10, true, "small"},
		{math.MaxInt64, 1, math.MaxInt64, true, 0, false, "max"},
		{math.MaxInt64, 2, 0, false, 0, false, "max twice"},
		{1 << 32, 1 << 31, 0, false, 1<<32 + 1<<31, true, "2^63 does not fit"},
		{1 << 31, 1 << 31, 1 << 62, true, 1 << 32, true, "2^62"},
		{1 << 62, 4, 0, false, 1<<62 + 4, true, "wraps to 0 unchecked"},
		{-1, 5, 0, false, 0, false, "negative"},
		{5, -1, 0, false, 0, false, "negative second"},
		{0, math.MaxInt64, 0, true, math.MaxInt64, true, "zero times max"},
	} {
		m, ok := Mul(c.a, c.b)
		assert.Equal(t, c.mulOK, ok, "%s: Mul ok", c.name)
		if ok {
			assert.Equal(t, c.mul, m, "%s: Mul", c.name)
		}
		s, ok := Add(c.a, c.b)
		assert.Equal(t, c.addOK, ok, "%s: Add ok", c.name)
		if ok {
			assert.Equal(t, c.add, s, "%s: Add", c.name)
		}
	}
}

func TestProductSumCalc(t *testing.T) {
	p, ok := Product(1_000_000_000, 22, 256, 2, 2)
	assert.True(t, ok)
	assert.Equal(t, int64(22_528_000_000_000), p)
	_, ok = Product(1<<40, 1<<40)
	assert.False(t, ok)
	p, ok = Product()
	assert.True(t, ok)
	assert.Equal(t, int64(1), p)
	s, ok := Sum(1, 2, 3)
	assert.True(t, ok)
	assert.Equal(t, int64(6), s)
	_, ok = Sum(math.MaxInt64, 1)
	assert.False(t, ok)

	var c Calc
	x := c.Add(c.Mul(4, 5), 1)
	assert.False(t, c.Overflow())
	assert.Equal(t, int64(21), x)
	x = c.Mul(c.Mul(1<<40, 1<<30), 2)
	assert.True(t, c.Overflow())
	assert.Equal(t, int64(0), x)
	assert.Equal(t, int64(0), c.Add(1, 1), "stays overflowed")
}

func TestInt(t *testing.T) {
	n, ok := Int(42)
	assert.True(t, ok)
	assert.Equal(t, 42, n)
	_, ok = Int(-1)
	assert.False(t, ok)
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		45_097_156_608: "42.0 GiB", 1 << 50: "1.0 PiB", math.MaxInt64: "8.0 EiB",
	} {
		assert.Equal(t, want, Bytes(n), "Bytes(%d)", n)
	}
}

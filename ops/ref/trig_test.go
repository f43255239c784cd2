package ref

import (
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// glibcTrig holds float32 bits of x, sinf(x) and cosf(x) as glibc 2.36's
// x86-64 libm (FMA variant, Zen 5) computed them: the special cases, then
// ten random values of each of glibc's ranges ([2⁻¹², 0.75), [0.75, 120),
// then up to 10⁴, 10⁷ and 3·10³⁸, the fixed-point reduction) at which
// glibc's result is not the correctly rounded one, so that a correctly
// rounded stand-in fails here.
var glibcTrig = [][3]uint32{
	{0x00000000, 0x00000000, 0x3f800000}, // 0
	{0x80000000, 0x80000000, 0x3f800000}, // -0
	{0x00080000, 0x00080000, 0x3f800000}, // 7.34684e-40
	{0x3727c5ac, 0x3727c5ac, 0x3f800000}, // 1e-05
	{0xb97fffff, 0xb97fffff, 0x3f800000}, // -0.00024414061
	{0x3f3ff972, 0x3f2e7b15, 0x3f3b546e}, // 0.7499
	{0x7f7fffff, 0xbf0599b3, 0x3f5a5f96}, // 3.4028235e+38
	{0x3f800000, 0x3f576aa4, 0x3f0a5140}, // 1
	{0x42f00000, 0x3f14a2ef, 0x3f506e2a}, // 120
	{0xc2effae1, 0xbf128b58, 0x3f51e814}, // -119.99
	{0x3ea6ebdb, 0x3ea3fae4, 0x3f7283e6}, // 0.32601818
	{0x3e8fa593, 0x3e8dc50a, 0x3f75fd93}, // 0.2805601
	{0xbe26cc0e, 0xbe260f7c, 0x3f7c9c82}, // -0.16288778
	{0x3e30aa17, 0x3e2fca12, 0x3f7c3318}, // 0.17252384
	{0x3e15a784, 0x3e151f48, 0x3f7d455b}, // 0.14614683
	{0xbe54f880, 0xbe53704d, 0x3f7a7bb6}, // -0.2079792
	{0x3de7bded, 0x3de73f68, 0x3f7e5ce2}, // 0.11315522
	{0x3e7ede82, 0x3e7c3eef, 0x3f781c83}, // 0.24889567
	{0xbe4f194d, 0xbe4db09d, 0x3f7ac841}, // -0.20224495
	{0x3e4240ef, 0x3e411736, 0x3f7b6854}, // 0.18970083
	{0xc204f564, 0xbf77db17, 0xbe801df9}, // -33.23964
	{0xc201891f, 0xbf52e0cb, 0x3f11248d}, // -32.383907
	{0x42b6b4e8, 0xbe7a8231, 0xbf7838ab}, // 91.35333
	{0x42881128, 0xbf61f72f, 0x3ef0a100}, // 68.03351
	{0x40121f00, 0x3f41bfa9, 0xbf27530c}, // 2.283142
	{0xbfb93cef, 0xbf7e0bd8, 0x3dfc89c3}, // -1.447172
	{0xc262f521, 0xbe421c84, 0x3f7b5bc0}, // -56.739384
	{0xc214db0a, 0x3eeecace, 0x3f6273bf}, // -37.213905
	{0x42308254, 0x3e13efb4, 0x3f7d507c}, // 44.127274
	{0xbf65fdd9, 0xbf48470e, 0x3f1f73ae}, // -0.89840466
	{0xc461c233, 0x3f7c27cc, 0xbe30cca1}, // -903.03436
	{0xc493ecb4, 0xbf551960, 0xbf0ddc9d}, // -1183.397
	{0xc5fbe6c3, 0x3eed209f, 0x3f62e399}, // -8060.845
	{0x442897fa, 0x3f604a6e, 0xbef6d129}, // 674.37463
	{0xc3d12c4f, 0x3efbe1fe, 0xbf5ee0dc}, // -418.34616
	{0x43e310f6, 0x3f7c34d6, 0xbe2fa20d}, // 454.1325
	{0x44ab47cf, 0x3ef9c713, 0x3f5f7849}, // 1370.244
	{0x459190ca, 0x3f45d785, 0xbf2276d2}, // 4658.0986
	{0xc303b14b, 0x3e80d2b2, 0x3f77c3aa}, // -131.69255
	{0xc4a08de4, 0xbeeb35be, 0xbf636333}, // -1284.4341
	{0x46bb9cf9, 0x3e1b226c, 0x3f7d0b8d}, // 24014.486
	{0xcabef37c, 0xbf5d5e16, 0x3f009415}, // -6.257086e+06
	{0x46393d71, 0xbf58d53b, 0x3f081617}, // 11855.36
	{0x49507fcf, 0x3f2eb1f1, 0xbf3b2147}, // 854012.94
	{0x4ad6efca, 0x3ee5164c, 0xbf64f1e6}, // 7.043045e+06
	{0xca17038a, 0x3f5f4cd4, 0x3efa625a}, // -2.4742105e+06
	{0x48074e40, 0x3f1d1eb3, 0xbf4a1cb8}, // 138553
	{0xc89fa69c, 0xbeeb83ee, 0x3f634ef6}, // -326964.88
	{0x47ac5b0b, 0xbf7313bc, 0x3ea09e31}, // 88246.086
	{0xc89f2e4d, 0x3f1da5b2, 0x3f49b37e}, // -326002.4
	{0x71d65497, 0x3f7dc9e4, 0xbe064d7d}, // 2.1226258e+30
	{0x6d8c7678, 0xbf3df111, 0x3f2ba242}, // 5.43389e+27
	{0x57105cf3, 0x3e4bdc03, 0x3f7ae02a}, // 1.5872889e+14
	{0x6e38f3f4, 0xbf747cef, 0x3e97cf80}, // 1.4310041e+28
	{0x619f69e5, 0x3f7d2143, 0xbe18e794}, // 3.6758285e+20
	{0x7da357c5, 0xbf593c62, 0x3f077131}, // 2.7139986e+37
	{0x69a44a08, 0x3f7ed39c, 0x3dc3dccb}, // 2.482668e+25
	{0xeb834468, 0xbf0448bd, 0xbf5b2c59}, // -3.1738464e+26
	{0xda62b95e, 0x3f5b72e8, 0xbf03d38e}, // -1.595429e+16
	{0xdd0c812a, 0x3f265a96, 0x3f429527}, // -6.327762e+17
}

func TestSinCosfMatchGlibc(t *testing.T) {
	for _, c := range glibcTrig {
		x := math.Float32frombits(c[0])
		assert.Equal(t, c[1], math.Float32bits(sinf(x)), "sinf(%g)", x)
		assert.Equal(t, c[2], math.Float32bits(cosf(x)), "cosf(%g)", x)
	}
}

// TestSinCosfWithinGlibcBound holds sinf and cosf to glibc's documented
// worst case, 0.5607 ulp from the true value, over random inputs of every
// range: a wrong coefficient, quadrant or reduction constant breaks it.
func TestSinCosfWithinGlibcBound(t *testing.T) {
	rng := newRNG(t)
	for i := range 50000 {
		lo, hi := -14.0, 12.0 // log2 |x|: below 2⁻¹², the polynomials, reduceFast and reduceLarge
		if i%4 == 3 {
			hi = 127
		}
		x := float32(math.Exp2(lo + rng.Float64()*(hi-lo)))
		if rng.IntN(2) == 1 {
			x = -x
		}
		for _, f := range []struct {
			name string
			got  float32
			want float64
		}{{"sinf", sinf(x), math.Sin(float64(x))}, {"cosf", cosf(x), math.Cos(float64(x))}} {
			ulp := float64(math.Nextafter32(float32(math.Abs(f.want)), float32(math.Inf(1)))) - math.Abs(float64(float32(f.want)))
			require.LessOrEqual(t, math.Abs(float64(f.got)-f.want), 0.5607*ulp+1e-300, "%s(%g) = %g, true %g", f.name, x, f.got, f.want)
		}
	}
	require.True(t, math.IsNaN(float64(sinf(float32(math.Inf(1))))))
	require.True(t, math.IsNaN(float64(cosf(float32(math.NaN())))))
}

// TestTwoOverPi checks the 192 bits of 2/π against π from Machin's
// formula in 256-bit arithmetic, and invPiO4's entries against their
// definition (glibc's table starts 0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e).
func TestTwoOverPi(t *testing.T) {
	const prec = 256
	atanInv := func(n int64) *big.Float { // arctan(1/n) = Σ (-1)^k / ((2k+1)·n^(2k+1))
		sum := new(big.Float).SetPrec(prec)
		pow := new(big.Float).SetPrec(prec).Quo(big.NewFloat(1).SetPrec(prec), big.NewFloat(float64(n)).SetPrec(prec))
		nn := new(big.Float).SetPrec(prec).SetInt64(n * n)
		for k := int64(0); k < 120; k++ {
			term := new(big.Float).SetPrec(prec).Quo(pow, new(big.Float).SetPrec(prec).SetInt64(2*k+1))
			if k%2 == 0 {
				sum.Add(sum, term)
			} else {
				sum.Sub(sum, term)
			}
			pow.Quo(pow, nn)
		}
		return sum
	}
	pi := new(big.Float).SetPrec(prec).Sub(
		new(big.Float).SetPrec(prec).Mul(big.NewFloat(16), atanInv(5)),
		new(big.Float).SetPrec(prec).Mul(big.NewFloat(4), atanInv(239)))
	frac := new(big.Float).SetPrec(prec).Quo(big.NewFloat(2).SetPrec(prec), pi)
	for i, want := range twoOverPi {
		frac.Mul(frac, big.NewFloat(1<<32))
		word, _ := frac.Uint64()
		require.Equal(t, want, uint32(word), "word %d of 2/π", i)
		frac.Sub(frac, new(big.Float).SetUint64(word))
	}
	require.Equal(t, []uint32{0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e, 0xf9836e4e}, invPiO4[:5])
	require.Equal(t, twoOverPi[5], invPiO4[23]) // the last entry: bits 160…191
}

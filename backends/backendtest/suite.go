package backendtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/ops"
)

// Options say what a backend does not run and how close it must come to
// the reference.
type Options struct {
	// Unsupported lists the cases the backend declares it cannot run, each
	// as an op name ("Dequantize") or an op and variant ("MatMul/Q2_K",
	// "Attention/f32"). For these the suite checks that Supports refuses
	// the op's node with a non-nil cause instead of running it; a listed
	// case that Supports accepts fails, and so does an unlisted one that it
	// refuses.
	Unsupported []string
	// Tolerances override the defaults (DefaultTolerance), keyed like
	// Unsupported; "Op/Variant" wins over "Op".
	Tolerances map[string]Tolerance
	// Skip names cases (keyed like Unsupported) that the backend accepts
	// but is known to get wrong, with the reason: they are skipped, and
	// the reason is printed. For gaps being fixed, not for tolerances.
	Skip map[string]string
	// UnfusedRoPE says the backend rounds both products of RoPE's rotation
	// before the sum (ref.RoPE.Unfused), as the Vulkan shaders must:
	// the references then rotate the same way. The CPU fuses the first
	// product into the sum, as ggml's compiled C does.
	UnfusedRoPE bool
	// Threads is passed to Load (0: the backend's default).
	Threads int
	// Seed makes a run repeatable; 0 takes one from the clock. Either way
	// the seed is logged, and every case derives its own stream from it
	// and its name, so one subtest replays alone with -run.
	Seed uint64
}

// Tolerance is how far a result may be from the reference. With Exact,
// every float32 must have the reference's bits. Otherwise each element
// must satisfy |got − want| ≤ Abs + Rel·m, where m is the op's error
// scale: the size of the terms the element is made of, defined per op in
// the package documentation (for a matmul Σₖ|wₖ·aₖ|, for an element-wise
// op |want|). NaN or ±Inf where the reference is finite always fails.
type Tolerance struct {
	Exact    bool
	Rel, Abs float64
}

func (t Tolerance) String() string {
	if t.Exact {
		return "bit-exact"
	}
	return fmt.Sprintf("|diff| ≤ %.3g + %.3g·m", t.Abs, t.Rel)
}

// Exact is the bit-for-bit tolerance.
var Exact = Tolerance{Exact: true}

// ExactFor returns a Tolerances map that demands bit-exact results for
// each key (an op or "Op/Variant").
func ExactFor(keys ...string) map[string]Tolerance {
	m := make(map[string]Tolerance, len(keys))
	for _, k := range keys {
		m[k] = Exact
	}
	return m
}

// Summation-order bounds, in units of float32's unit roundoff u = 2⁻²⁴.
// The suite's sizes are small (K ≤ 1024 for matmuls, rows ≤ 300 for
// norms), so a bound stated as a constant multiple of the term scale
// holds for any summation order with float32 accumulators, while an
// indexing, scaling or rounding-point error in a kernel is orders of
// magnitude larger.
var defaults = map[string]Tolerance{
	// Exact copies of values (widened from the table type for GetRows):
	// one rounding of a dequantized value (d·q+m with or without FMA).
	ops.GetRows:    {Rel: 0x1p-22},
	ops.SelectRows: {Rel: 0},
	ops.Part:       {Rel: 0x1p-14}, // a part of a matmul result: as MatMul
	ops.Copy:       {Rel: 0},
	ops.Dequantize: {Rel: 0x1p-22},
	// One float32 operation per element.
	ops.Mul:   {Rel: 0x1p-23},
	ops.Add:   {Rel: 0x1p-23},
	ops.Scale: {Rel: 0x1p-23},
	// A device's tanh is a few ulp off libm's.
	ops.SoftCap: {Rel: 0x1p-18},
	// Exponentials: GPU exp is a few ulp (Vulkan allows 3+2|x| ulp).
	ops.SiLU:    {Rel: 0x1p-16},
	ops.SwiGLU:  {Rel: 0x1p-16},
	ops.Softmax: {Rel: 0x1p-15},
	// GELU rounds to binary16 like ggml's table: a neighbouring rounding
	// may flip one binary16 step.
	ops.GELU: {Rel: 0x1p-10, Abs: 0x1p-24},
	// Norms: a sum over the row (float32 or float64) and a square root.
	ops.RMSNorm:         {Rel: 0x1p-14},
	ops.RMSNormMul:      {Rel: 0x1p-14},
	ops.LayerNorm:       {Rel: 0x1p-14},
	ops.LayerNormMul:    {Rel: 0x1p-14},
	ops.LayerNormMulAdd: {Rel: 0x1p-14},
	// Angles of up to a few thousand radians: an ulp of the angle moves
	// sin and cos by about 2⁻¹³ relative to the pair.
	ops.RoPE: {Rel: 0x1p-12},
	// Products with activations converted exactly as quant.QuantizeRow
	// does; only the summation order may differ. 2⁻¹⁴ = K·u for the
	// largest K here (1024): the worst case of any float32 order. A
	// backend that quantizes activations its own way states a looser bound.
	ops.MatMul:             {Rel: 0x1p-14},
	ops.MatMulQKV:          {Rel: 0x1p-14},
	ops.MatMulAdd:          {Rel: 0x1p-14},
	ops.MatMulBias:         {Rel: 0x1p-14},
	ops.MatMulGateUpSwiGLU: {Rel: 0x1p-14},
	ops.MatMulGateUpGeGLU:  {Rel: 0x1p-14},
	// Attention: m is itself the bound for two implementations that round
	// Q and P to binary16 (f16 cache) at the same points and differ only
	// in summation order and the last bits of exp (see attnRef.bound).
	ops.Attention: {Rel: 1},
}

// DefaultTolerance returns the suite's tolerance for key ("Op" or
// "Op/Variant") before any override.
func DefaultTolerance(key string) Tolerance {
	if t, ok := defaults[key]; ok {
		return t
	}
	op, _, _ := strings.Cut(key, "/")
	if t, ok := defaults[op]; ok {
		return t
	}
	return Tolerance{Rel: 0x1p-14}
}

// tolerance resolves the tolerance of op's variant with o's overrides.
func (o *Options) tolerance(op, variant string) Tolerance {
	keys := []string{op}
	if variant != "" {
		keys = []string{op + "/" + variant, op}
	}
	for _, k := range keys {
		if t, ok := o.Tolerances[k]; ok {
			return t
		}
	}
	if variant != "" {
		if t, ok := defaults[op+"/"+variant]; ok {
			return t
		}
	}
	return DefaultTolerance(op)
}

// unsupported reports whether op's variant is declared unsupported.
func (o *Options) unsupported(op, variant string) bool {
	for _, u := range o.Unsupported {
		if u == op || (variant != "" && u == op+"/"+variant) {
			return true
		}
	}
	return false
}

// Run runs every op of the catalogue on e, one subtest per op and per
// variant (weight type, KV type, broadcast form, …) and shape, and compares
// each result with ops/ref on fresh random inputs.
func Run(t *testing.T, e backends.Executor, o Options) {
	t.Helper()
	seed := o.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("backend %s, seed %d (Options.Seed replays it)", e.Name(), seed)
	s := &suite{e: e, o: o, seed: seed, short: testing.Short()}
	for _, c := range catalogue() {
		t.Run(c.op, func(t *testing.T) { c.run(t, s) })
	}
}

// suite is one Run's shared state.
type suite struct {
	e     backends.Executor
	o     Options
	seed  uint64
	short bool
}

// rng returns a generator derived from the seed and a case's full name.
func (s *suite) rng(t *testing.T) *rand.Rand {
	var h uint64 = 14695981039346656037
	for _, c := range []byte(t.Name()) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return rand.New(rand.NewPCG(s.seed, h))
}

// opCase is one op's tests.
type opCase struct {
	op  string
	run func(t *testing.T, s *suite)
}

// catalogue lists every op of package ops with its tests. TestCatalogue
// checks that no registered op is missing.
func catalogue() []opCase {
	return []opCase{
		{ops.GetRows, testGetRows},
		{ops.SelectRows, testSelectRows},
		{ops.Copy, testCopy},
		{ops.Dequantize, testDequantize},
		{ops.Mul, testBinary(ops.Mul)},
		{ops.Add, testBinary(ops.Add)},
		{ops.Scale, testScale},
		{ops.SiLU, testUnary(ops.SiLU)},
		{ops.GELU, testUnary(ops.GELU)},
		{ops.SoftCap, testSoftCap},
		{ops.SwiGLU, testSwiGLU},
		{ops.Softmax, testSoftmax},
		{ops.RMSNorm, testNorm(ops.RMSNorm)},
		{ops.LayerNorm, testNorm(ops.LayerNorm)},
		{ops.RMSNormMul, testNorm(ops.RMSNormMul)},
		{ops.LayerNormMul, testNorm(ops.LayerNormMul)},
		{ops.LayerNormMulAdd, testNorm(ops.LayerNormMulAdd)},
		{ops.RoPE, testRoPE},
		{ops.MatMul, testMatMul},
		{ops.MatMulAdd, testMatMulAdd},
		{ops.MatMulBias, testMatMulBias},
		{ops.MatMulGateUpSwiGLU, testGateUp(swiGLU)},
		{ops.MatMulGateUpGeGLU, testGateUp(geGLU)},
		{ops.MatMulQKV, testQKV},
		{ops.Part, testPart},
		{ops.Attention, testAttention},
	}
}

// Ops lists the ops the suite covers, in the order it runs them.
func Ops() []string {
	var names []string
	for _, c := range catalogue() {
		names = append(names, c.op)
	}
	return names
}

// ulpDiff is used in messages: how many float32 steps apart two values are.
func ulpDiff(a, b float32) int64 {
	ia, ib := int64(math.Float32bits(a)), int64(math.Float32bits(b))
	if ia < 0x80000000 == (ib < 0x80000000) {
		d := ia - ib
		if d < 0 {
			d = -d
		}
		return d
	}
	return math.MaxInt64
}

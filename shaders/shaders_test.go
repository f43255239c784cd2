//go:build linux && (amd64 || arm64)

package shaders_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/backends/vulkan/vulkantest"
	"github.com/weft-ml/weft/ops/ref"
	"github.com/weft-ml/weft/quant"
	"github.com/weft-ml/weft/shaders"
)

// Every shader is run on lavapipe (or whatever device 0 is) with the
// validation layer on, on fresh random inputs of awkward sizes, and
// compared with the ops/ref kernel. Outputs are poisoned with NaN before
// each run. Tolerances are stated per op.

type env struct {
	t   testing.TB
	d   *vulkan.Device
	rng *rand.Rand
	ks  map[string]*vulkan.Kernel
}

func newEnv(t testing.TB) *env {
	d := vulkantest.Open(t)
	seed := rand.Uint64()
	if v := os.Getenv("WEFT_TEST_SEED"); v != "" {
		// Replays a failure: the seed its log printed.
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "WEFT_TEST_SEED")
		seed = n
	}
	t.Logf("seed %d", seed)
	return &env{t: t, d: d, rng: rand.New(rand.NewPCG(seed, 0x5eed)), ks: map[string]*vulkan.Kernel{}}
}

// kernel returns the named kernel; NAME#V sets specialization constant 1
// to V (matvec's NT).
func (e *env) kernel(name string) *vulkan.Kernel {
	if k := e.ks[name]; k != nil {
		return k
	}
	base, v, specialized := strings.Cut(name, "#")
	s, err := shaders.Lookup(base)
	require.NoError(e.t, err)
	var spec []uint32
	if specialized { // NAME#A,B,…: specialization constants 1, 2, …
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			require.NoError(e.t, err)
			spec = append(spec, uint32(n))
		}
	}
	spirv, wg := s.SPIRV, s.Workgroup
	if dir := os.Getenv("WEFT_SHADER_MUTANTS"); dir != "" {
		// Mutation testing where there is no Go toolchain (the GPU
		// machine): a mutated variant's SPIR-V in dir replaces the
		// embedded one, and the tests must fail.
		if b, err := os.ReadFile(filepath.Join(dir, base+".spv")); err == nil {
			e.t.Logf("%s: the mutant from %s", base, dir)
			spirv = b
		}
		// A variant of another workgroup size (timing a design
		// against another) says so in dir/<variant>.wg.
		if b, err := os.ReadFile(filepath.Join(dir, base+".wg")); err == nil {
			n, err := strconv.Atoi(strings.TrimSpace(string(b)))
			require.NoError(e.t, err, "%s.wg", base)
			wg = n
		}
	}
	k, err := e.d.NewKernel(vulkan.KernelSpec{Name: s.Name, SPIRV: spirv, Bindings: s.Bindings, PushBytes: s.PushBytes, Workgroup: uint32(wg), Spec: spec})
	require.NoError(e.t, err)
	e.t.Cleanup(k.Close)
	e.ks[name] = k
	return k
}

// random returns n values uniform in [-1, 1), never exactly zero.
func (e *env) random(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		for v[i] == 0 {
			v[i] = 2*e.rng.Float32() - 1
		}
	}
	return v
}

// buf allocates a buffer of at least n bytes (rounded up to 4) and
// uploads data; nil data poisons it with NaN.
func (e *env) buf(n int, data []byte) *vulkan.Buffer {
	n = (n + 3) &^ 3
	b, err := e.d.Alloc(int64(n))
	require.NoError(e.t, err)
	e.t.Cleanup(b.Free)
	if data == nil {
		data = make([]byte, n)
		for i := 0; i < n; i += 4 {
			binary.LittleEndian.PutUint32(data[i:], 0x7fc00000) // NaN
		}
	}
	require.NoError(e.t, e.d.Upload(b, 0, data))
	return b
}

func (e *env) f32(v []float32) *vulkan.Buffer { return e.buf(4*len(v), f32Bytes(v)) }
func (e *env) out(n int) *vulkan.Buffer       { return e.buf(4*n, nil) }

func (e *env) read(b *vulkan.Buffer, n int) []float32 {
	v := make([]float32, n)
	require.NoError(e.t, e.d.DownloadF32(v, b, 0))
	return v
}

// run records one dispatch of kernel name and runs it.
func (e *env) run(name string, groups [3]uint32, push []byte, bufs ...*vulkan.Buffer) {
	p, err := e.d.NewProgram()
	require.NoError(e.t, err)
	defer p.Close()
	rs := make([]vulkan.Range, len(bufs))
	for i, b := range bufs {
		rs[i] = vulkan.Whole(b)
	}
	require.NoError(e.t, p.Dispatch(e.kernel(name), groups, push, rs...))
	require.NoError(e.t, p.End())
	require.NoError(e.t, p.Run())
}

// rows is the dispatch for one workgroup per row.
func (e *env) rows(n int) [3]uint32 {
	x, y := e.d.RowGroups(uint32(n))
	return [3]uint32{x, y, 1}
}

func pushWords(vals ...any) []byte {
	var b []byte
	for _, v := range vals {
		switch v := v.(type) {
		case int:
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		case float32:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		default:
			panic(fmt.Sprintf("push constant of type %T", v))
		}
	}
	return b
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// close reports whether got is within abs + rel·|want| of want (NaN never
// is).
func close(got, want, abs, rel float64) bool {
	return math.Abs(got-want) <= abs+rel*math.Abs(want)
}

func requireClose(t *testing.T, what string, got, want []float32, abs, rel float64) {
	t.Helper()
	require.Len(t, got, len(want))
	worst, at := 0.0, -1
	for i := range want {
		if !close(float64(got[i]), float64(want[i]), abs, rel) {
			require.Failf(t, what, "element %d: got %g, want %g (tolerance %g + %g·|want|)", i, got[i], want[i], abs, rel)
		}
		if d := math.Abs(float64(got[i]) - float64(want[i])); d > worst {
			worst, at = d, i
		}
	}
	if at >= 0 {
		t.Logf("%s: max abs error %.3g at %d (want %g)", what, worst, at, want[at])
	}
}

func TestEveryVariantCompiles(t *testing.T) {
	e := newEnv(t)
	require.NotEmpty(t, shaders.All())
	coop := 0
	for _, k := range shaders.All() {
		assert.Zero(t, len(k.SPIRV)%4, k.Name)
		assert.Equal(t, uint32(0x07230203), binary.LittleEndian.Uint32(k.SPIRV), "%s: SPIR-V magic", k.Name)
		if !e.d.Info().RunsKernel(k) {
			coop++ // this device cannot create it
			continue
		}
		e.kernel(k.Name)
	}
	if coop > 0 {
		t.Logf("%d variants need cooperative matrices, which %s lacks: not created", coop, e.d.Info().Name)
	}
	_, err := shaders.Lookup("no_such_kernel")
	assert.Error(t, err)
}

// Add and Mul: IEEE addition and multiplication are correctly rounded in
// Vulkan, so the results must be bit-identical (inputs have no denormals,
// which a device may flush).
func TestBinaryOps(t *testing.T) {
	e := newEnv(t)
	for _, op := range []struct {
		name string
		ref  func(dst, a, b []float32)
	}{{"add_f32", ref.Add}, {"mul_f32", ref.Mul}} {
		for _, c := range []struct{ n, nb, groups int }{
			{1, 1, 1}, {257, 257, 2}, {13 * 331, 331, 17}, {100003, 100003, 3}, {7 * 4099, 4099, 200},
		} {
			a, b := e.random(c.n), e.random(c.nb)
			want := make([]float32, c.n)
			op.ref(want, a, b)
			ab, bb, db := e.f32(a), e.f32(b), e.out(c.n)
			// Few workgroups on purpose: the grid-stride loop covers the rest.
			e.run(op.name, [3]uint32{uint32(c.groups), 1, 1}, pushWords(c.n, c.nb, 0, 0, 0), ab, bb, db)
			assert.Equal(t, want, e.read(db, c.n), "%s n=%d nb=%d", op.name, c.n, c.nb)
			// In place: d aliases a.
			e.run(op.name, [3]uint32{uint32(c.groups), 1, 1}, pushWords(c.n, c.nb, 0, 0, 0), ab, bb, ab)
			assert.Equal(t, want, e.read(ab, c.n), "%s in place n=%d nb=%d", op.name, c.n, c.nb)
		}
	}
}

// SiLU: the device's exp is accurate to a few ulp (Vulkan allows 3+2|x|
// ulp) and so is ggml's vector exp; tolerance 1e-6 absolute + 4e-6
// relative.
func TestSiLU(t *testing.T) {
	e := newEnv(t)
	for _, n := range []int{1, 15, 17, 4099, 100001} {
		x := e.random(n)
		for i := range x {
			x[i] *= 12 // exercise the tails of the exponential
		}
		want := make([]float32, n)
		ref.SiLU(want, x)
		xb, db := e.f32(x), e.out(n)
		e.run("silu_f32", [3]uint32{uint32(min((n+255)/256, 64)), 1, 1}, pushWords(n, 0, 0, 0), xb, db)
		requireClose(t, fmt.Sprintf("silu n=%d", n), e.read(db, n), want, 1e-6, 4e-6)
	}
}

// RMSNorm: ggml sums the squares in double, the shader in float with a
// different order; the scale then differs by a few float ulp. Tolerance
// 1e-6 absolute + 2e-6 relative on values of order 1.
func TestRMSNorm(t *testing.T) {
	e := newEnv(t)
	const eps = 1e-5
	for _, c := range []struct{ rows, cols int }{{1, 1}, {3, 7}, {5, 333}, {2, 4099}, {3, 8193}, {1, 2048}, {4, 96}, {2, 1312}, {3, 768}, {2, 256}} {
		x := e.random(c.rows * c.cols)
		w := e.random(c.cols)
		if c.cols%256 == 0 {
			// Q8_K: equal magnitudes of opposite sign, the largest of the
			// super-block (the first sets the scale), and an all-zero
			// super-block (d = 0).
			x[10], x[200], w[10], w[200] = -9, 9, 1, 1
			if c.cols >= 512 {
				clear(x[256:512])
			}
		}
		want := make([]float32, len(x))
		ref.RMSNorm(want, x, c.cols, eps)
		wantW := make([]float32, len(x))
		ref.Mul(wantW, want, w)

		xb, db := e.f32(x), e.out(len(x))
		e.run("rms_norm_f32", e.rows(c.rows), pushWords(c.cols, c.rows, float32(eps), 0, 0, 0, 0), xb, db)
		requireClose(t, fmt.Sprintf("rms_norm %dx%d", c.rows, c.cols), e.read(db, len(x)), want, 1e-6, 2e-6)

		wb, dw := e.f32(w), e.out(len(x))
		e.run("rms_norm_mul_f32", e.rows(c.rows), pushWords(c.cols, c.rows, float32(eps), 0, 0, 0, 0), xb, dw, wb)
		requireClose(t, fmt.Sprintf("rms_norm·w %dx%d", c.rows, c.cols), e.read(dw, len(x)), wantW, 1e-6, 2e-6)

		// Fused with the activations' quantization or rounding: the same
		// bits as rms_norm_mul_f32 then quantize_q8_0/q8_1/q8_k or round_*.
		for _, kind := range []string{"q8_0", "q8_1", "q8_k", "f16", "bf16", "f16x2"} {
			words := c.rows * c.cols // f16, bf16: a word per value
			switch {
			case kind == "f16x2":
				words = c.rows * ((c.cols + 1) / 2) // binary16 pairs
			case kind == "q8_0" && c.cols%32 == 0:
				words = c.rows * c.cols / 32 * 9
			case kind == "q8_1" && c.cols%32 == 0:
				words = c.rows * c.cols / 32 * 10
			case kind == "q8_k" && c.cols%256 == 0:
				words = c.rows * c.cols / 256 * 73
			case kind == "q8_0" || kind == "q8_1" || kind == "q8_k":
				continue // whole blocks only
			}
			sep := "quantize_" + kind
			if kind == "f16" || kind == "bf16" || kind == "f16x2" {
				sep = "round_" + kind
			}
			const qoff = 3
			qa, qb, df := e.out(qoff+words), e.out(qoff+words), e.out(len(x))
			e.run(sep, [3]uint32{4, 1, 1}, pushWords(c.cols, c.rows, 0, qoff), dw, qa)
			e.run("rms_norm_mul_"+kind, e.rows(c.rows), pushWords(c.cols, c.rows, float32(eps), 0, 0, 0, qoff), xb, df, wb, qb)
			require.Equal(t, e.read(dw, len(x)), e.read(df, len(x)), "rms_norm_mul_%s %dx%d: values", kind, c.rows, c.cols)
			require.Equal(t, f32Bits(e.readAt(qa, qoff, words)), f32Bits(e.readAt(qb, qoff, words)), "rms_norm_mul_%s %dx%d: activations", kind, c.rows, c.cols)
			if kind == "f16x2" {
				// round_f16x2's pairs are quant.FP32ToFP16 of the values,
				// the high half of an odd row's last word 0.
				v, pairs := e.read(dw, len(x)), f32Bits(e.readAt(qa, qoff, words))
				for r := range c.rows {
					for j := range (c.cols + 1) / 2 {
						want := uint32(quant.FP32ToFP16(v[r*c.cols+2*j]))
						if 2*j+1 < c.cols {
							want |= uint32(quant.FP32ToFP16(v[r*c.cols+2*j+1])) << 16
						}
						require.Equal(t, want, pairs[r*((c.cols+1)/2)+j], "round_f16x2 %dx%d: row %d pair %d", c.rows, c.cols, r, j)
					}
				}
			}

			// Split into parts of 512 values, a workgroup each (as a decode
			// step runs it): the same bits.
			if parts := (c.cols + 511) / 512; parts > 1 {
				g := e.rows(c.rows)
				g[2] = uint32(parts)
				qp, dp := e.out(qoff+words), e.out(len(x))
				e.run("rms_norm_mul_"+kind, g, pushWords(c.cols, c.rows, float32(eps), 0, 0, 0, qoff), xb, dp, wb, qp)
				require.Equal(t, e.read(dw, len(x)), e.read(dp, len(x)), "rms_norm_mul_%s %dx%d in %d parts: values", kind, c.rows, c.cols, parts)
				require.Equal(t, f32Bits(e.readAt(qa, qoff, words)), f32Bits(e.readAt(qp, qoff, words)), "rms_norm_mul_%s %dx%d in %d parts: activations", kind, c.rows, c.cols, parts)
			}
		}

		// In place.
		e.run("rms_norm_f32", e.rows(c.rows), pushWords(c.cols, c.rows, float32(eps), 0, 0, 0, 0), xb, xb)
		requireClose(t, fmt.Sprintf("rms_norm in place %dx%d", c.rows, c.cols), e.read(xb, len(x)), want, 1e-6, 2e-6)
	}
}

// Softmax: exp differs in the last ulp, the sum's order differs (ggml sums
// groups in double); tolerance 1e-7 absolute + 1e-5 relative on
// probabilities. Masked (-Inf) entries must be exactly 0.
func TestSoftmax(t *testing.T) {
	e := newEnv(t)
	const scale = 0.125
	for _, c := range []struct{ rows, cols int }{{1, 1}, {3, 17}, {4, 1001}, {2, 5003}} {
		x := e.random(c.rows * c.cols)
		for i := range x {
			x[i] *= 40
			if c.cols > 1 && i%c.cols != 0 && e.rng.IntN(5) == 0 {
				x[i] = float32(math.Inf(-1)) // masked; column 0 stays finite
			}
		}
		want := append([]float32(nil), x...)
		for r := 0; r < c.rows; r++ {
			ref.SoftmaxRow(want[r*c.cols:(r+1)*c.cols], scale)
		}
		xb, db := e.f32(x), e.out(len(x))
		e.run("softmax_f32", e.rows(c.rows), pushWords(c.cols, c.rows, float32(scale), 0, 0), xb, db)
		got := e.read(db, len(x))
		requireClose(t, fmt.Sprintf("softmax %dx%d", c.rows, c.cols), got, want, 1e-7, 1e-5)
		for i := range x {
			if math.IsInf(float64(x[i]), -1) {
				require.Zero(t, got[i], "masked entry %d", i)
			}
		}
		// In place.
		e.run("softmax_f32", e.rows(c.rows), pushWords(c.cols, c.rows, float32(scale), 0, 0), xb, xb)
		requireClose(t, fmt.Sprintf("softmax in place %dx%d", c.rows, c.cols), e.read(xb, len(x)), want, 1e-7, 1e-5)
	}
}

// unsafeBytes views float32 storage as 4-byte-aligned bytes (MatMul's
// scratch).
func unsafeBytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// f32Bits returns the bits of v (words that are not float values).
func f32Bits(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, f := range v {
		out[i] = math.Float32bits(f)
	}
	return out
}

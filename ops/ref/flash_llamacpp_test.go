package ref

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// fagenCase is one case of testdata/flash/tools/fagen.c (the same list,
// in the same order of fields).
type fagenCase struct {
	name                               string
	k, v                               string
	hd, heads, kvHeads, nTok, nKV, win int
	scale, softCap                     float32
	seed                               uint32
}

var fagenCases = []fagenCase{
	{"f16-hd64", "f16", "f16", 64, 4, 2, 3, 200, 0, 0.125, 0, 1},
	{"f16-hd8-window", "f16", "f16", 8, 8, 4, 5, 40, 9, 0.35355339, 0, 2},
	{"f16-hd96-softcap", "f16", "f16", 96, 2, 1, 1, 300, 0, 0.1, 1.5, 3},
	{"q8_0-hd64", "q8_0", "q8_0", 64, 4, 1, 2, 150, 0, 0.125, 0, 4},
	{"q4_0-hd128-window", "q4_0", "q4_0", 128, 4, 2, 2, 100, 30, 0.08838835, 0, 5},
	{"q8_0-f16-hd32", "q8_0", "f16", 32, 2, 2, 4, 70, 0, 0.17677669, 0, 6},
	{"q4_0-q8_0-hd96", "q4_0", "q8_0", 96, 3, 1, 3, 90, 0, 0.10206207, 0, 7},
}

// fagenRand is fagen.c's generator: xorshift32, 24 bits scaled to
// [-amp, amp), exact in float32.
type fagenRand uint32

func (s *fagenRand) value(amp float32) float32 {
	x := uint32(*s)
	x ^= x << 13
	x ^= x >> 17
	x ^= x << 5
	*s = fagenRand(x)
	return float32(int32(x>>8)-1<<23) * (amp / 8388608)
}

// TestFlashAttentionLlamaCpp runs FlashAttention on fagen.c's inputs and
// compares with what llama.cpp c392e5094's CPU ggml_flash_attn_ext
// computed from them (testdata/flash/op, see testdata/flash/README.md):
// the caches filled by Store as ggml_cpy fills them, queries at the last
// nTok positions, causal mask with an optional window. Every output must
// be bit-identical, except with soft-capping, where libm's tanhf (which
// Go does not share) may move one by up to 2 ulp of 0.5.
func TestFlashAttentionLlamaCpp(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "flash", "op")
	for _, c := range fagenCases {
		t.Run(c.name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, c.name+".f32"))
			require.NoError(t, err)
			width, qn := c.kvHeads*c.hd, c.nTok*c.heads*c.hd
			require.Len(t, raw, 4*qn)
			s := fagenRand(c.seed)
			q := make([]float32, qn)
			for i := range q {
				q[i] = s.value(1)
			}
			kr, vr := make([][]float32, c.nKV), make([][]float32, c.nKV)
			for _, rows := range []struct {
				r   [][]float32
				amp float32
			}{{kr, 2}, {vr, 1}} {
				for p := range rows.r {
					rows.r[p] = make([]float32, width)
					for i := range rows.r[p] {
						rows.r[p][i] = s.value(rows.amp)
					}
				}
			}
			k, v := flashCache(c.k, kr, width, c.nKV), flashCache(c.v, vr, width, c.nKV)
			got := make([]float32, qn)
			o := AttnOptions{Window: c.win, SoftCap: c.softCap}
			FlashAttention(got, q, k, v, c.nTok, c.nKV-c.nTok, c.heads, c.kvHeads, c.hd, c.scale, o, NewFlashScratch(c.hd))
			same, worst := 0, 0.0
			for i, g := range got {
				want := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
				if g == want {
					same++
				}
				d := math.Abs(float64(g-want)) / ulp32(0.5)
				worst = max(worst, d)
				if c.softCap == 0 {
					require.Equal(t, want, g, "element %d", i)
				}
				require.LessOrEqual(t, d, 2.0, "element %d: got %.9g, llama.cpp %.9g", i, g, want)
			}
			t.Logf("%d of %d bit-identical, worst %.2g ulp(0.5)", same, qn, worst)
		})
	}
}

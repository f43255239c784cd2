package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// VDPBF16PS (AVX512_BF16), which neither Go's assembler nor avo knows,
// emitted as the bytes of its EVEX encoding. The kernels issue it as an
// instruction of that name with its registers as operands, inputs and
// outputs, so that avo's liveness analysis and register allocator treat it
// as any other; once avo has written the assembly, encodeRawInstructions
// replaces each such line by BYTE directives for the registers bound,
// keeping the instruction as a comment.

// encodeVDPBF16PS returns the encoding of VDPBF16PS zmm(dst), zmm(src1),
// zmm(src2) (Intel order; Go's is src2, src1, dst), register form, no
// mask: EVEX.512.F3.0F38.W0 52 /r (Intel SDM vol. 2, VDPBF16PS). dst is
// ModRM.reg, src1 EVEX.vvvv, src2 ModRM.rm; registers 0–31.
func encodeVDPBF16PS(dst, src1, src2 int) [6]byte {
	if dst|src1|src2 < 0 || dst > 31 || src1 > 31 || src2 > 31 {
		panic(fmt.Sprintf("VDPBF16PS: bad register Z%d, Z%d, Z%d", dst, src1, src2))
	}
	inv := func(r, bit int) byte { return byte(^(r >> bit) & 1) } // EVEX stores these inverted
	// P0: R X B R' 0 0 m m — R, R' extend reg (bits 3, 4); B, X extend
	// rm (bits 3, 4: X is rm's fifth bit in register form); mm 10 = 0F38.
	p0 := inv(dst, 3)<<7 | inv(src2, 4)<<6 | inv(src2, 3)<<5 | inv(dst, 4)<<4 | 0b10
	// P1: W vvvv 1 pp — W0, vvvv = src1's low four bits inverted, pp 10 = F3.
	p1 := byte(^src1&0xf)<<3 | 1<<2 | 0b10
	// P2: z L'L b V' aaa — no zeroing, L'L 10 = 512 bits, no broadcast,
	// V' = src1's fifth bit inverted, no mask (k0).
	p2 := byte(0b10)<<5 | inv(src1, 4)<<3
	modrm := byte(0b11)<<6 | byte(dst&7)<<3 | byte(src2&7)
	return [6]byte{0x62, p0, p1, p2, 0x52, modrm}
}

// vdpbf16ps adds into acc, per float32 lane i, the products of the
// bfloat16 pairs of lane i of src1 and src2: odd elements first, then even
// ones (Intel's pseudocode, which this CPU family follows: see
// dot_bf16.go), each add rounded to nearest even, with denormal inputs
// and results flushed to zero. Go operand order: VDPBF16PS src2, src1, acc.
func vdpbf16ps(src2, src1, acc reg.Register) {
	Instruction(&ir.Instruction{
		Opcode:   "VDPBF16PS",
		Operands: []Op{src2, src1, acc},
		Inputs:   []Op{src2, src1, acc},
		Outputs:  []Op{acc},
		ISA:      []string{"AVX512_BF16"},
	})
}

// vdpbf16psLine matches what avo prints for vdpbf16ps.
var vdpbf16psLine = regexp.MustCompile(`(?m)^(\t)VDPBF16PS +Z(\d+), Z(\d+), Z(\d+)$`)

// unencoded finds any VDPBF16PS instruction vdpbf16psLine missed.
var unencoded = regexp.MustCompile(`(?m)^\s*VDPBF16PS\b.*$`)

// encodeRawInstructions rewrites the VDPBF16PS lines of the assembly file
// at path as BYTE directives.
func encodeRawInstructions(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	n := 0
	out := vdpbf16psLine.ReplaceAllFunc(src, func(line []byte) []byte {
		m := vdpbf16psLine.FindSubmatch(line)
		var z [3]int
		for k := range z {
			z[k], _ = strconv.Atoi(string(m[2+k]))
		}
		b := encodeVDPBF16PS(z[2], z[1], z[0])
		parts := make([]string, len(b))
		for k, x := range b {
			parts[k] = fmt.Sprintf("BYTE $0x%02x", x)
		}
		n++
		return fmt.Appendf(nil, "%s%s // VDPBF16PS Z%d, Z%d, Z%d", m[1], strings.Join(parts, "; "), z[0], z[1], z[2])
	})
	if left := unencoded.Find(out); left != nil {
		return fmt.Errorf("%s: %q left unencoded (%d encoded)", path, left, n)
	}
	return os.WriteFile(path, out, 0o644)
}

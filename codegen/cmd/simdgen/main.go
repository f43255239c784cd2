package main

import (
	"flag"
	"log"

	. "github.com/mmcloughlin/avo/build"
)

var tableOut = flag.String("table", "", "write the jennifer-generated kernel table to `file`")

func main() {
	flag.Parse()
	ConstraintExpr("!purego")
	var reg registry
	genQuantQ8_0(&reg)
	genQuantQ8_K(&reg)
	genQuantF16(&reg)
	genQuantBF16(&reg)
	for _, v := range variants {
		genDotQ8_0(v, &reg)
		genDotQ4_0(v, &reg)
		genDotF16(v, &reg)
		genDotBF16(v, &reg)
		genDotQ4K(v, &reg)
		genDotQ6K(v, &reg)
		genDotIQ4NL(v, &reg)
		genDotIQ4XS(v, &reg)
		genDotTQ2(v, &reg)
		genDotIQ2XXS(v, &reg)
		genDotIQ3S(v, &reg)
		genDotQ5K(v, &reg)
		genDotQ2K(v, &reg)
		genGemmLegacy(v, &reg, gemmQ8_0)
		genGemmLegacy(v, &reg, gemmQ4_0)
		genGemmF16(v, &reg)
		genGemmF16Wide(v, &reg)
		genGemmBF16(v, &reg)
		genGemmBF16DP(v, &reg)
		genDecodeFloat(v, &reg)
		genGemmK(v, &reg, "TypeQ4_K", 2, gemmQ4KTile)
		genGemmK(v, &reg, "TypeQ6_K", 4, gemmQ6KTile)
		genPacked(v, &reg, packedQ4_0)
		genPacked(v, &reg, packedQ8_0)
		genPackedQ4K(v, &reg)
		genPackedQ5K(v, &reg)
		genPackedQ6K(v, &reg)
		genPackedIQ4XS(v, &reg)
		genExpKernels(v, &reg)
		genBinaryKernels(v, &reg)
		genSoftmaxSteps(v, &reg)
		genFlashKernels(v, &reg)
		genFlashTiles(v, &reg)
		genFlashScores(v, &reg)
		genFlashScan(v, &reg)
		genGELUKernel(v, &reg)
		genDotF32(v, &reg)
		genRoPEKernels(v, &reg)
	}
	if *tableOut != "" {
		if err := writeTable(*tableOut, &reg); err != nil {
			log.Fatal(err)
		}
	}
	Generate()
	// The assembler does not know every instruction the kernels use.
	if out := flag.Lookup("out").Value.String(); out != "" && out != "-" {
		if err := encodeRawInstructions(out); err != nil {
			log.Fatal(err)
		}
		if err := vexScalarMoves(out); err != nil {
			log.Fatal(err)
		}
	}
}

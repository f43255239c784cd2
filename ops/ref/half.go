package ref

import "github.com/weft-ml/weft/quant"

// Short names for the conversions of package quant, which match the x86
// F16C instructions and ggml's bf16 helper bit for bit.

func halfToFloat(h uint16) float32 { return quant.FP16ToFP32(h) }
func floatToHalf(f float32) uint16 { return quant.FP32ToFP16(f) }
func bf16ToFloat(h uint16) float32 { return quant.BF16ToFP32(h) }
func floatToBF16(f float32) uint16 { return quant.FP32ToBF16(f) }

// roundHalf rounds f to the nearest binary16 value.
func roundHalf(f float32) float32 { return halfToFloat(floatToHalf(f)) }

// roundBF16 rounds f to the nearest bfloat16 value.
func roundBF16(f float32) float32 { return bf16ToFloat(floatToBF16(f)) }

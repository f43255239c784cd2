package synth

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/weft-ml/weft/gguf"
)

// FileType is a llama.cpp file type (llama_ftype): the value stored in
// general.file_type and the base tensor type of a quantization mix.
type FileType struct {
	Name string          // llama-quantize's name, e.g. "Q4_K_M"
	ID   uint32          // general.file_type
	Base gguf.TensorType // type of the tensors the mix does not single out
}

// llama_ftype values for the mixes weft supports.
const (
	ftypeF32    = 0
	ftypeF16    = 1
	ftypeQ4_0   = 2
	ftypeQ4_1   = 3
	ftypeQ8_0   = 7
	ftypeQ5_0   = 8
	ftypeQ5_1   = 9
	ftypeQ2_K   = 10
	ftypeQ3_KS  = 11
	ftypeQ3_KM  = 12
	ftypeQ3_KL  = 13
	ftypeQ4_KS  = 14
	ftypeQ4_KM  = 15
	ftypeQ5_KS  = 16
	ftypeQ5_KM  = 17
	ftypeQ6_K   = 18
	ftypeIQ4_NL = 25
	ftypeIQ4_XS = 30
	ftypeBF16   = 32
	ftypeTQ1_0  = 36
	ftypeTQ2_0  = 37
)

var fileTypes = []FileType{
	{"F32", ftypeF32, gguf.TypeF32},
	{"F16", ftypeF16, gguf.TypeF16},
	{"BF16", ftypeBF16, gguf.TypeBF16},
	{"Q4_0", ftypeQ4_0, gguf.TypeQ4_0},
	{"Q4_1", ftypeQ4_1, gguf.TypeQ4_1},
	{"Q5_0", ftypeQ5_0, gguf.TypeQ5_0},
	{"Q5_1", ftypeQ5_1, gguf.TypeQ5_1},
	{"Q8_0", ftypeQ8_0, gguf.TypeQ8_0},
	{"Q2_K", ftypeQ2_K, gguf.TypeQ2_K},
	{"Q3_K_S", ftypeQ3_KS, gguf.TypeQ3_K},
	{"Q3_K_M", ftypeQ3_KM, gguf.TypeQ3_K},
	{"Q3_K_L", ftypeQ3_KL, gguf.TypeQ3_K},
	{"Q4_K_S", ftypeQ4_KS, gguf.TypeQ4_K},
	{"Q4_K_M", ftypeQ4_KM, gguf.TypeQ4_K},
	{"Q5_K_S", ftypeQ5_KS, gguf.TypeQ5_K},
	{"Q5_K_M", ftypeQ5_KM, gguf.TypeQ5_K},
	{"Q6_K", ftypeQ6_K, gguf.TypeQ6_K},
	{"IQ4_NL", ftypeIQ4_NL, gguf.TypeIQ4_NL},
	{"IQ4_XS", ftypeIQ4_XS, gguf.TypeIQ4_XS},
	{"TQ1_0", ftypeTQ1_0, gguf.TypeTQ1_0},
	{"TQ2_0", ftypeTQ2_0, gguf.TypeTQ2_0},
}

// readOnlyTypes are llama-quantize's mixes of lattice types (and Q2_K_S),
// which weft runs but cannot write: their quantizers need an importance
// matrix (llama-quantize refuses IQ1_S, IQ1_M, IQ2_S, IQ2_XXS, IQ2_XS and
// Q2_K_S without one), which weft does not compute.
var readOnlyTypes = []string{"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_XS", "IQ3_S", "IQ3_M", "Q2_K_S"}

// aliases are llama-quantize's short names for the _M mixes.
var aliases = map[string]string{"Q3_K": "Q3_K_M", "Q4_K": "Q4_K_M", "Q5_K": "Q5_K_M"}

// NeedsImatrix reports whether name is one of llama-quantize's mixes that
// weft runs but cannot write, because their quantizers need an importance
// matrix (see ParseFileType's error).
func NeedsImatrix(name string) bool { return slices.Contains(readOnlyTypes, strings.ToUpper(name)) }

// ParseFileType maps a name such as "q4_k_m", "Q8_0" or "f16" to its file type.
func ParseFileType(name string) (FileType, error) {
	up := strings.ToUpper(name)
	if a, ok := aliases[up]; ok {
		up = a
	}
	for _, ft := range fileTypes {
		if ft.Name == up {
			return ft, nil
		}
	}
	if slices.Contains(readOnlyTypes, up) {
		return FileType{}, fmt.Errorf("%s: weft runs %s models but cannot write them: llama.cpp quantizes them against "+
			"an importance matrix (llama-imatrix), which weft does not compute; use llama-quantize --imatrix", up, up)
	}
	return FileType{}, fmt.Errorf("unknown type %q (known: %s)", name, strings.Join(FileTypeNames(), ", "))
}

// FileTypeNames lists the accepted type names, aliases included, sorted.
func FileTypeNames() []string {
	var names []string
	for _, ft := range fileTypes {
		names = append(names, ft.Name)
	}
	for a := range aliases {
		names = append(names, a)
	}
	sort.Strings(names)
	return names
}

// quantized reports whether the base type is a block-quantized type, the
// case in which llama.cpp applies its per-tensor mix rules.
func (ft FileType) quantized() bool { return ft.Base.BlockSize() > 1 }

// FileTypeName returns llama.cpp's name for a general.file_type value, or ""
// for values outside the supported mixes.
func FileTypeName(id uint32) string {
	for _, ft := range fileTypes {
		if ft.ID == id {
			return ft.Name
		}
	}
	return ""
}

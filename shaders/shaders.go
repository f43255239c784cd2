package shaders

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Kernel is one compiled shader variant.
type Kernel struct {
	Name      string   // e.g. "matvec_f16"
	Source    string   // the .comp file it was compiled from
	Defines   []string // the preprocessor defines of this variant
	Bindings  int      // storage buffers at bindings 0..Bindings-1
	PushBytes int      // size of the push-constant block
	Workgroup int      // default workgroup size (specialization constant 0)
	SPIRV     []byte   // the SPIR-V module; do not modify
}

// NeedsCoopMatrix says whether the variant uses NVIDIA's cooperative
// matrices (GL_NV_cooperative_matrix, int8): only a device with them
// enabled can create it.
func (k Kernel) NeedsCoopMatrix() bool { return slices.Contains(k.Defines, "COOP") }

// NeedsCoopMatrix2 says whether the variant runs on NVIDIA's cooperative
// matrix 2 (GL_NV_cooperative_matrix2, SPIR-V for Vulkan 1.3): only a
// device with it enabled can create it.
func (k Kernel) NeedsCoopMatrix2() bool { return slices.Contains(k.Defines, "COOP2") }

// DefineInt is the value of the variant's define name=N, if it has one.
func (k Kernel) DefineInt(name string) (int, bool) {
	for _, d := range k.Defines {
		if v, ok := strings.CutPrefix(d, name+"="); ok {
			n, err := strconv.Atoi(v)
			return n, err == nil
		}
	}
	return 0, false
}

// Lookup returns the variant called name.
func Lookup(name string) (Kernel, error) {
	for _, k := range kernels {
		if k.Name == name {
			return k, nil
		}
	}
	return Kernel{}, fmt.Errorf("shaders: no kernel %q", name)
}

// All returns every variant.
func All() []Kernel {
	return append([]Kernel(nil), kernels...)
}

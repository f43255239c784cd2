package simd

import "golang.org/x/sys/cpu"

// CPUFeatures lists the instruction-set extensions this CPU has among
// those the choice of kernels looks at, for benchmark reports.
func CPUFeatures() []string {
	x := cpu.X86
	var out []string
	for _, f := range []struct {
		name string
		has  bool
	}{
		{"avx2", x.HasAVX2}, {"fma", x.HasFMA}, {"avx512f", x.HasAVX512F}, {"avx512bw", x.HasAVX512BW},
		{"avx512vl", x.HasAVX512VL}, {"avx512vnni", x.HasAVX512VNNI}, {"avx512bf16", x.HasAVX512BF16},
	} {
		if f.has {
			out = append(out, f.name)
		}
	}
	return out
}

//go:build linux && (amd64 || arm64)

package vulkan

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/backends/vulkan/internal/vk"
	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/internal/safefile"
	"github.com/weft-ml/weft/ops"
	"github.com/weft-ml/weft/shaders"
)

func init() { backends.Register(Backend{}) }

// name is the Vulkan backend's name, as placement records it.
const name = "vulkan"

// Backend is the Vulkan backend as the compiler and runtime see it. Load
// opens device LoadOptions.Device (graphrun --device; an index into
// Devices), or WEFT_VULKAN_DEVICE when that is 0, with the validation
// layer on when WEFT_VULKAN_VALIDATION=1;
// LoadOn loads onto a device the caller opened.
type Backend struct{}

// Name returns "vulkan".
func (Backend) Name() string { return name }

// maxHeadDim is the largest attention head the attention shader takes
// (4 values per invocation of a 64-wide workgroup).
const maxHeadDim = 256

// weightKernel names the shader suffix of each weight type the matmul and
// row-gather shaders read.
var weightKernel = map[gguf.TensorType]string{
	gguf.TypeF32: "f32", gguf.TypeF16: "f16", gguf.TypeQ8_0: "q8_0", gguf.TypeQ4_0: "q4_0", gguf.TypeQ5_0: "q5_0",
	gguf.TypeQ2_K: "q2_k", gguf.TypeQ3_K: "q3_k", gguf.TypeQ4_K: "q4_k", gguf.TypeQ5_K: "q5_k", gguf.TypeQ6_K: "q6_k",
	gguf.TypeBF16: "bf16", gguf.TypeQ4_1: "q4_1", gguf.TypeQ5_1: "q5_1",
	gguf.TypeIQ4_NL: "iq4_nl", gguf.TypeIQ4_XS: "iq4_xs",
	gguf.TypeIQ2_XXS: "iq2_xxs", gguf.TypeIQ2_XS: "iq2_xs", gguf.TypeIQ2_S: "iq2_s",
	gguf.TypeIQ3_XXS: "iq3_xxs", gguf.TypeIQ3_S: "iq3_s", gguf.TypeIQ1_S: "iq1_s", gguf.TypeIQ1_M: "iq1_m",
	gguf.TypeTQ1_0: "tq1_0", gguf.TypeTQ2_0: "tq2_0",
}

// hasKernel reports whether weights of a type have a shader of the
// family named by prefix ("matmul_" for matmul.comp, "matmul_tiled_",
// "matmul_coop_"): shadergen's index decides, so a type gains a path by
// gaining its variants. matvec.comp reads every type of weightKernel.
func hasKernel(prefix string) func(t gguf.TensorType) bool {
	return func(t gguf.TensorType) bool {
		_, err := shaders.Lookup(prefix + weightKernel[t])
		return err == nil
	}
}

// actKind names the activations a matmul weight type takes: float32,
// binary16-rounded, bfloat16-rounded, Q8_0 blocks (quantize_q8_0), Q8_1
// blocks (quantize_q8_1) or Q8_K blocks (quantize_q8_k), as the CPU
// backend pairs them (quant.VecDotType).
func actKind(t gguf.TensorType) string {
	switch {
	case t == gguf.TypeF32:
		return "f32"
	case t == gguf.TypeF16:
		return "f16"
	case t == gguf.TypeBF16:
		return "bf16"
	case t == gguf.TypeQ4_1 || t == gguf.TypeQ5_1:
		return "q8_1"
	case t.BlockSize() == 256:
		return "q8_k"
	}
	return "q8_0"
}

// Supports accepts the nodes the shaders implement, by op, types and
// attributes. A weight's Layout (a CPU repacking) does not matter: this
// backend always reads the GGUF bytes.
func (Backend) Supports(n *graph.Node, g *graph.Graph) error {
	in := func(i int) *graph.Node { return g.Nodes[n.Inputs[i]] }
	switch n.Op {
	case "Input":
		return nil
	case ops.Copy:
		// A graph input, or a value another backend computed (uploaded
		// at the start of the split that reads it).
		if t := in(0).Type.DType; in(0).Op == "Weight" || in(0).Op != "Input" && t != gguf.TypeF32 {
			return fmt.Errorf("Copy of a %s %s: Vulkan takes graph inputs and computed F32 values", t, in(0).Op)
		}
		return nil
	case "Weight":
		if _, ok := weightKernel[n.Type.DType]; !ok {
			return fmt.Errorf("no Vulkan shader reads %s weights", n.Type.DType)
		}
		return nil
	case ops.GetRows:
		return weightOperand(in(0), "embedding table")
	case ops.SelectRows:
		if t := in(0).Type.DType; t != gguf.TypeF32 {
			return fmt.Errorf("SelectRows of %s rows: the Vulkan shader takes F32", t)
		}
		return nil
	case ops.SiLU, ops.SwiGLU, ops.Softmax, ops.RMSNorm, ops.Add, ops.Mul:
		for i := range n.Inputs {
			if t := in(i).Type.DType; t != gguf.TypeF32 {
				return fmt.Errorf("%s of a %s operand: the Vulkan shader takes F32", n.Op, t)
			}
		}
		return nil
	case ops.RMSNormMul:
		if in(1).Type.DType != gguf.TypeF32 {
			return fmt.Errorf("RMSNormMul with a %s weight: the Vulkan shader takes F32", in(1).Type.DType)
		}
		return nil
	case ops.GELU, ops.Scale, ops.SoftCap, ops.LayerNorm, ops.LayerNormMul, ops.LayerNormMulAdd:
		// gelu_f32 and scale_f32 (silu.comp), layer_norm*.comp: F32
		// operands, norm weight and bias 1-D.
		for i := range n.Inputs {
			if t := in(i).Type; t.DType != gguf.TypeF32 || (i > 0 && len(t.Shape) != 1) {
				return fmt.Errorf("%s with operand %d of %s: the Vulkan shader takes F32 (weights 1-D)", n.Op, i, t)
			}
		}
		return nil
	case ops.Part:
		if in(0).Op != ops.MatMulQKV {
			return fmt.Errorf("Part of %s: Vulkan lays out only MatMulQKV's parts", in(0).Op)
		}
		return nil
	case ops.MatMul, ops.MatMulAdd, ops.MatMulQKV, ops.MatMulGateUpSwiGLU, ops.MatMulBias, ops.MatMulGateUpGeGLU:
		ws := ops.MatMulWeights(n)
		for _, id := range ws {
			if err := weightOperand(g.Nodes[id], "matmul weight"); err != nil {
				return err
			}
			// One activation conversion serves every weight of a node
			// (MatMulQKV of Q4_K and Q6_K weights shares Q8_K).
			if a, b := g.Nodes[id].Type.DType, g.Nodes[ws[0]].Type.DType; actKind(a) != actKind(b) {
				return fmt.Errorf("weights of types %s and %s in one node take different activations", a, b)
			}
		}
		if n.Op == ops.MatMulGateUpSwiGLU || n.Op == ops.MatMulGateUpGeGLU {
			if gt, ut := g.Nodes[ws[0]].Type, g.Nodes[ws[1]].Type; gt.DType != ut.DType || !gt.Shape.Equal(ut.Shape) {
				return fmt.Errorf("gate %s and up %s differ", gt, ut)
			}
		}
		if b := in(len(n.Inputs) - 1); n.Op == ops.MatMulBias && (b.Type.DType != gguf.TypeF32 || len(b.Type.Shape) != 1) {
			return fmt.Errorf("MatMulBias with a %s bias: the Vulkan shaders take a 1-D F32 row", b.Type)
		}
		return nil
	case ops.RoPE:
		a := n.Attrs
		if a.Int("dims") <= 0 || a.Int("dims")%2 != 0 || a.Int("dims") > a.Int("head_dim") {
			return fmt.Errorf("RoPE of %d dimensions in heads of %d", a.Int("dims"), a.Int("head_dim"))
		}
		return nil
	case ops.Attention:
		a := n.Attrs
		heads, kv, hd := a.Int("heads"), a.Int("kv_heads"), a.Int("head_dim")
		switch {
		case kv <= 0 || heads%kv != 0:
			return fmt.Errorf("%d query heads cannot share %d KV heads", heads, kv)
		case hd <= 0 || hd > maxHeadDim:
			return fmt.Errorf("head dimension %d: the Vulkan attention shader takes up to %d", hd, maxHeadDim)
		case hd%2 != 0:
			return fmt.Errorf("head dimension %d: the Vulkan attention shader reads K in pairs and needs an even one", hd)
		}
		return nil
	}
	if custom, err := customSupports(n, g); custom {
		return err
	}
	return fmt.Errorf("no Vulkan shader for %s", n.Op)
}

// weightOperand checks a matmul or gather operand: a weight of a type the
// shaders read, with whole blocks per row.
func weightOperand(w *graph.Node, what string) error {
	if w.Op != "Weight" {
		return fmt.Errorf("the %s is a computed %s value, not a weight", what, w.Type.DType)
	}
	if _, ok := weightKernel[w.Type.DType]; !ok {
		return fmt.Errorf("no Vulkan shader reads %s weights (%s)", w.Type.DType, what)
	}
	if len(w.Type.Shape) != 2 {
		return fmt.Errorf("the %s has shape %s", what, w.Type.Shape)
	}
	if bs := w.Type.DType.BlockSize(); bs > 1 && w.Type.Shape[1].N%int64(bs) != 0 {
		return fmt.Errorf("the %s's rows of %d are not whole %s blocks", what, w.Type.Shape[1].N, w.Type.DType)
	}
	return nil
}

// Devices lists the Vulkan devices for graphrun --list-devices.
func (Backend) Devices() ([]backends.DeviceInfo, error) {
	devs, err := Devices()
	if err != nil {
		return nil, err
	}
	out := make([]backends.DeviceInfo, len(devs))
	for i, d := range devs {
		out[i] = d.listed()
	}
	return out, nil
}

// listed describes the device as the backends package lists devices.
func (i DeviceInfo) listed() backends.DeviceInfo {
	driver := fmt.Sprintf("Vulkan %s, %s, subgroup %d", i.API, i.Driver, i.SubgroupSize)
	if i.CoopInt8() {
		driver += ", int8 tensor cores"
	}
	if i.CoopF16() {
		driver += ", f16 tensor cores"
	}
	if i.CoopMatrix2F16() {
		driver += ", f16 tensor cores by " + vk.ExtCooperativeMatrix2NV
	}
	return backends.DeviceInfo{Index: i.Index, Name: i.Name, Kind: i.Type, Driver: driver, Memory: int64(i.DeviceLocalBytes)}
}

// DeviceInfo describes the device e was loaded on (backends.DeviceDescriber).
func (e *Executable) DeviceInfo() backends.DeviceInfo { return e.d.info.listed() }

// Load loads g onto the process's device for o.Device (see Backend and
// sharedDevice).
func (Backend) Load(g *graph.Graph, w backends.Weights, o backends.LoadOptions) (backends.Program, error) {
	index, err := deviceIndex(o.Device)
	if err != nil {
		return nil, err
	}
	seed := readPipelineCache(o.CacheFile)
	d, err := sharedDevice(index, seed)
	if err != nil {
		return nil, err
	}
	p, err := LoadOn(d, g, w, o)
	if err != nil {
		return nil, err
	}
	// Kernels are created as step shapes are first recorded, so the cache
	// is complete when the model closes.
	p.beforeFree = func() { savePipelineCache(d, o, seed) }
	return p, nil
}

// deviceIndex is the device a caller's index names: WEFT_VULKAN_DEVICE
// where the caller left the default, 0.
func deviceIndex(index int) (int, error) {
	if s := os.Getenv("WEFT_VULKAN_DEVICE"); s != "" && index == 0 {
		i, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("WEFT_VULKAN_DEVICE=%q: want a device index", s)
		}
		return i, nil
	}
	return index, nil
}

// The devices Load has opened, one per index, kept for the life of the
// process: models loaded one after another (a server, a test suite)
// reuse the instance and device instead of creating hundreds (NVIDIA's
// driver stops creating instances after a few hundred in one process),
// and their pipeline caches accumulate. A model's Close frees its
// buffers and kernels, not the device.
var opened struct {
	sync.Mutex
	devs map[int]*Device
}

// sharedDevice returns the process's device for index, opening it (seeded
// with the pipeline cache data seed) the first time.
func sharedDevice(index int, seed []byte) (*Device, error) {
	opened.Lock()
	defer opened.Unlock()
	if d, ok := opened.devs[index]; ok {
		return d, nil
	}
	o := Options{PipelineCache: seed}
	if os.Getenv("WEFT_VULKAN_VALIDATION") == "1" {
		// Validation for debugging a run: its messages go to stderr.
		o.Validation = true
		o.OnMessage = func(m vk.Message) { fmt.Fprintf(os.Stderr, "vulkan validation: %v\n", m) }
	}
	d, err := Open(index, o)
	if err != nil {
		return nil, err
	}
	if opened.devs == nil {
		opened.devs = map[int]*Device{}
	}
	opened.devs[index] = d
	return d, nil
}

// maxPipelineCache bounds the pipeline cache read back at load.
const maxPipelineCache = 256 << 20

// readPipelineCache returns the stored pipeline cache, or nil when there
// is none or it cannot be read (the cache only saves time).
func readPipelineCache(path string) []byte {
	if path == "" {
		return nil
	}
	data, err := safefile.ReadLimited(path, "pipeline cache", maxPipelineCache)
	if err != nil {
		return nil
	}
	return data
}

// savePipelineCache stores the device's pipeline cache when it grew or
// changed. A failure to write costs the next start time, not this run,
// so it is not an error.
func savePipelineCache(d *Device, o backends.LoadOptions, seed []byte) {
	if o.CacheFile == "" {
		return
	}
	data, err := d.PipelineCacheData()
	if err != nil || len(data) == 0 || bytes.Equal(data, seed) {
		return
	}
	_ = safefile.WriteFile(o.CacheFile, data, o.ModelFile, o.PackedFile)
}

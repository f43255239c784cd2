package backends

import (
	"errors"
	"fmt"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/graph"
)

// Backend is a device that can execute graph nodes. Placement asks
// Supports for every node: decisions are made on op, types and attributes,
// never on tensor names.
type Backend interface {
	Name() string
	// Supports returns nil when the backend can run n, else the reason it
	// cannot (recorded as the placement's cause).
	Supports(n *graph.Node, g *graph.Graph) error
}

// LayoutProvider is an optional Backend capability: weight layouts its
// kernels prefer, applied by the weight-layout pass at compile time.
type LayoutProvider interface {
	Layouts() []Layout
}

// Executor is a Backend that can run the nodes placed on it.
type Executor interface {
	Backend
	// Load prepares g's nodes placed on this backend: it binds or uploads
	// their weights from w (or from the repacked side data) and plans the
	// activation arena for batches of up to o.MaxTokens tokens.
	Load(g *graph.Graph, w Weights, o LoadOptions) (Program, error)
}

// DeviceLister is an optional Executor capability: the devices the
// backend can run on (graphrun --list-devices).
type DeviceLister interface {
	Devices() ([]DeviceInfo, error)
}

// DeviceDescriber is an optional Program capability: the device the
// program was loaded on, described as DeviceLister lists it (graphrun
// bench's report names it).
type DeviceDescriber interface {
	DeviceInfo() DeviceInfo
}

// BandwidthMeter is an optional Executor capability of a backend whose
// device has memory of its own (a GPU): ReadBandwidth streams a buffer of
// the device's memory with one of its kernels reps times, after a warm-up,
// and returns each repetition's rate in GB/s (10⁹ bytes a second) — the
// ceiling decode runs against there (graphrun bench --bandwidth).
type BandwidthMeter interface {
	ReadBandwidth(device, reps int) ([]float64, error)
}

// DeviceInfo describes one device.
type DeviceInfo struct {
	Index  int    // what LoadOptions.Device takes
	Name   string // e.g. "NVIDIA H100 80GB HBM3", "llvmpipe (LLVM 15.0.6, 256 bits)"
	Kind   string // "discrete GPU", "integrated GPU", "CPU", …
	Driver string // driver name and version
	Memory int64  // device-local memory in bytes (0: not known)
}

// String describes the device in one line, "NAME, KIND: DRIVER" (graphrun
// bench's report), or "" for the zero DeviceInfo (no device of its own).
func (i DeviceInfo) String() string {
	if i.Name == "" {
		return ""
	}
	return fmt.Sprintf("%s, %s: %s", i.Name, i.Kind, i.Driver)
}

// Weights gives a backend the bytes of the model's tensors.
type Weights interface {
	Tensor(name string) (*gguf.TensorInfo, bool)
	TensorData(t *gguf.TensorInfo) []byte
}

// LoadOptions configure Executor.Load.
type LoadOptions struct {
	MaxTokens int    // largest batch
	Threads   int    // host threads; 0: the backend's default
	Packed    []byte // weights repacked at compile time (graph.Layout offsets index it)
	// ModelFile and PackedFile name the files behind the weights and
	// Packed, for messages.
	ModelFile, PackedFile string
	Device                int // which device of the backend's kind (0: the first)
	// CacheFile, when set, is where the backend may keep what it compiles
	// at load (the Vulkan pipeline cache), to start faster next time. It
	// is written with internal/safefile's rules and never over an input.
	CacheFile string
	// Progress, when set, hears how many of the weights' bytes a backend
	// that copies them (to a GPU) has copied so far.
	Progress func(done, total int64)
	// Placed asks the backend to load only the nodes placed on it
	// (graph.Node.Backend): the graph's other nodes run elsewhere, and
	// values cross through Copy nodes and an Exchange (see split.go). Its
	// States then implement SplitState. Unset, the backend runs every
	// node of the graph itself.
	Placed bool
	// F16AsBF16 asks the CPU backend to convert F16 matmul weights to
	// BF16 at load and run its BF16 kernels (graphrun --f16-as-bf16).
	// Other backends ignore it; the runtime refuses it for them.
	F16AsBF16 bool
}

// ErrWeightsChanged is matched (errors.Is) by the errors a backend returns
// when a mapped weights file changed or was truncated under the running
// process: the plan is fine, the file must be restored.
var ErrWeightsChanged = errors.New("a weights file changed while running")

// Program is a loaded graph: immutable, shared by every session of a model.
type Program interface {
	MaxTokens() int
	ActivationBytes() int64
	// NewState allocates one session's activations and KV cache.
	NewState(o StateOptions) (State, error)
}

// KVType is the element type of the KV cache.
type KVType int

// KV cache element types. Q8_0 and Q4_0 (llama.cpp's -ctk/-ctv q8_0 and
// q4_0) quantize K and V on store; they need flash attention (CheckKV).
const (
	KVF16 KVType = iota
	KVF32
	KVQ8_0
	KVQ4_0
)

// String returns "f16", "f32", "q8_0" or "q4_0".
func (t KVType) String() string {
	switch t {
	case KVF32:
		return "f32"
	case KVQ8_0:
		return "q8_0"
	case KVQ4_0:
		return "q4_0"
	}
	return "f16"
}

// Quantized reports whether the cache stores blocks (Q8_0, Q4_0).
func (t KVType) Quantized() bool { return t == KVQ8_0 || t == KVQ4_0 }

// ParseKVType reads "f16", "f32", "q8_0" or "q4_0".
func ParseKVType(s string) (KVType, error) {
	switch s {
	case "f16":
		return KVF16, nil
	case "f32":
		return KVF32, nil
	case "q8_0":
		return KVQ8_0, nil
	case "q4_0":
		return KVQ4_0, nil
	}
	return 0, fmt.Errorf("KV cache type %q: want f16, f32, q8_0 or q4_0", s)
}

// ParseFlashAcc reads a flash-attention accumulator (--flash-acc): ""
// or "f16", llama.cpp's (binary16 with an f16 V cache), or "f32"
// (StateOptions.FlashF32Acc).
func ParseFlashAcc(s string) (f32 bool, err error) {
	switch s {
	case "", "f16":
		return false, nil
	case "f32":
		return true, nil
	}
	return false, fmt.Errorf("flash attention accumulator %q: want f16 (llama.cpp's numerics, the default) or f32 (faster on the CPU, not llama.cpp's numerics)", s)
}

// CheckKV applies llama.cpp's rules (c392e5094) to a KV cache type and
// the flash-attention switch: a quantized cache quantizes V, which only
// flash attention reads ("V cache quantization requires flash_attn"), and
// llama.cpp's CPU flash attention has no f32 cache (it aborts on one).
func CheckKV(t KVType, flash bool) error {
	switch {
	case t.Quantized() && !flash:
		return fmt.Errorf("a %s KV cache quantizes V, which needs flash attention (as in llama.cpp): add --flash-attn, or use --kv-type f16", t)
	case t == KVF32 && flash:
		return fmt.Errorf("flash attention runs on an f16, q8_0 or q4_0 KV cache, not f32 (llama.cpp's CPU flash attention has none): use --kv-type f16 or leave out --flash-attn")
	}
	return nil
}

// CheckFlashAcc refuses FlashF32Acc without flash attention.
func CheckFlashAcc(o StateOptions) error {
	if o.FlashF32Acc && !o.FlashAttn {
		return fmt.Errorf("--flash-acc f32 sets flash attention's accumulator, and flash attention is off: add --flash-attn")
	}
	return nil
}

// StateOptions configure Program.NewState.
type StateOptions struct {
	Ctx    int // KV cache positions of each sequence
	KVType KVType
	// FlashAttn computes attention as llama.cpp's flash attention (-fa)
	// does: an online softmax over the cells, no score rows, its rounding
	// points (see ops/ref.FlashAttention). CheckKV says which KV types
	// go with it.
	FlashAttn bool
	// FlashF32Acc keeps flash attention's accumulator in float32 with an
	// f16 V cache too (ops/ref.AttnOptions.F32Acc), where llama.cpp
	// rounds it to binary16 at every cell: faster on the CPU, not
	// llama.cpp's numerics (ik_llama.cpp's choice). It needs FlashAttn
	// (CheckFlashAcc); a backend that cannot honour it refuses the state.
	FlashF32Acc bool
	// Seqs is the number of independent sequences the State holds (0: 1),
	// each with its own Ctx KV cells: a KV cache of Seqs·Ctx cells in all.
	Seqs int
}

// Batch is one step's tokens: Positions[i] is Tokens[i]'s position in its
// sequence, Seqs[i] that sequence (nil: every token is of sequence 0),
// Rows the batch rows whose logits are wanted.
//
// A token at (sequence s, position p) writes its K and V into s's cell p
// and attends to s's cells 0..p only. The tokens of one sequence are
// contiguous in the batch at consecutive positions; sequences may come in
// any order and with any number of tokens (CheckBatch).
type Batch struct {
	Tokens, Positions, Rows []int32
	Seqs                    []int32
}

// NumSeqs is o.Seqs with its default.
func (o StateOptions) NumSeqs() int { return max(o.Seqs, 1) }

// State is one session's memory on a backend. It is used by one goroutine
// at a time.
type State interface {
	Context() int   // KV cache positions
	KVBytes() int64 // KV cache size
	// Run evaluates a batch and returns the logits of the rows asked for,
	// [len(Rows)][vocab]; the slice is the State's until the next Run.
	Run(b Batch) ([]float32, error)
}

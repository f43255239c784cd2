package compute

import "github.com/weft-ml/weft/gguf"

// tensor is one weight a Builder holds: its description and bytes.
type tensor struct {
	info gguf.TensorInfo
	data []byte
}

// weightSet serves a Builder's weights to the passes (repacking) and the
// backend, as a GGUF file would (backends.Weights).
type weightSet map[string]*tensor

func (ws weightSet) Tensor(name string) (*gguf.TensorInfo, bool) {
	t, ok := ws[name]
	if !ok {
		return nil, false
	}
	return &t.info, true
}

func (ws weightSet) TensorData(t *gguf.TensorInfo) []byte {
	if w, ok := ws[t.Name]; ok {
		return w.data
	}
	return nil
}

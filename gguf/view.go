package gguf

import (
	"fmt"
	"strconv"
	"strings"
)

// Views: a model may store several matrices in one tensor (q, k and v in
// attn_qkv; gate and up in ffn_up). A lowering reads each part as a
// tensor of its own, named ViewName(tensor, from, to): the outermost
// slices [from, to) of the tensor (rows of a matrix, elements of a
// vector), which are contiguous in the file. Tensor resolves such a name
// to a TensorInfo over those bytes, so every reader of weights (kernels,
// repacking, uploads) sees an ordinary tensor, and a plan that names a
// view finds it again in the file.

// viewSep separates the tensor's name from the slice range.
const viewSep = "@rows="

// ViewName names the outermost slices [from, to) of tensor.
func ViewName(tensor string, from, to int) string {
	return fmt.Sprintf("%s%s%d:%d", tensor, viewSep, from, to)
}

// view resolves a ViewName, or returns false when name is not one or its
// range does not lie inside the tensor.
func (f *File) view(name string) (*TensorInfo, bool) {
	f.viewMu.Lock()
	defer f.viewMu.Unlock()
	if v, ok := f.views[name]; ok {
		return v, true
	}
	base, rng, ok := strings.Cut(name, viewSep)
	if !ok {
		return nil, false
	}
	lo, hi, ok := strings.Cut(rng, ":")
	if !ok {
		return nil, false
	}
	from, err1 := strconv.ParseUint(lo, 10, 63)
	to, err2 := strconv.ParseUint(hi, 10, 63)
	i, found := f.tensorIndex[base]
	if err1 != nil || err2 != nil || !found || from >= to {
		return nil, false
	}
	t := &f.Tensors[i]
	if len(t.Dims) == 0 {
		return nil, false
	}
	outer := t.Dims[len(t.Dims)-1]
	if to > outer || t.Size%outer != 0 {
		return nil, false
	}
	unit := t.Size / outer // bytes per row (or element) of the outermost dimension
	dims := append([]uint64(nil), t.Dims...)
	dims[len(dims)-1] = to - from
	v := &TensorInfo{Name: name, Dims: dims, Type: t.Type, Offset: t.Offset + from*unit, Size: (to - from) * unit}
	if f.views == nil {
		f.views = map[string]*TensorInfo{}
	}
	f.views[name] = v // the same pointer on every lookup, as for stored tensors
	return v, true
}

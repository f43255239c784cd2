package graph

import (
	"fmt"
	"strings"

	"github.com/weft-ml/weft/gguf"
)

// DType is an element type. Activations are F32, token ids I32; weights keep
// their GGUF storage type (Q4_0, F16, …).
type DType = gguf.TensorType

// Common element types.
const (
	F32 = gguf.TypeF32
	F16 = gguf.TypeF16
	I32 = gguf.TypeI32
)

// Dim is one dimension: a constant N, or a symbol bound at run time.
type Dim struct {
	Sym string `json:"sym,omitempty"`
	N   int64  `json:"n,omitempty"`
}

// Symbolic dimensions used by the lowerings.
var (
	Tokens = Dim{Sym: "T"} // tokens in the batch
	Rows   = Dim{Sym: "R"} // output rows (positions whose logits are wanted)
)

// D returns a constant dimension.
func D(n int64) Dim { return Dim{N: n} }

// IsSym reports whether d is symbolic.
func (d Dim) IsSym() bool { return d.Sym != "" }

func (d Dim) String() string {
	if d.IsSym() {
		return d.Sym
	}
	return fmt.Sprint(d.N)
}

// Shape lists dimensions outermost first.
type Shape []Dim

// S builds a shape from dims (Dim values or ints).
func S(dims ...any) Shape {
	s := make(Shape, len(dims))
	for i, d := range dims {
		switch v := d.(type) {
		case Dim:
			s[i] = v
		case int:
			s[i] = D(int64(v))
		case int64:
			s[i] = D(v)
		default:
			panic(fmt.Sprintf("graph.S: bad dim %T", d)) // programming error in a lowering, not input
		}
	}
	return s
}

// Equal reports whether two shapes are identical.
func (s Shape) Equal(o Shape) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// Inner returns the innermost dimension, which is always constant for the
// ops weft supports (feature width).
func (s Shape) Inner() Dim {
	if len(s) == 0 {
		return D(1)
	}
	return s[len(s)-1]
}

// Bind resolves symbols with env and returns the element count.
func (s Shape) Bind(env map[string]int64) (int64, error) {
	n := int64(1)
	for _, d := range s {
		v := d.N
		if d.IsSym() {
			x, ok := env[d.Sym]
			if !ok {
				return 0, fmt.Errorf("unbound dimension %s", d.Sym)
			}
			v = x
		}
		n *= v
	}
	return n, nil
}

// PerRow returns the product of all dimensions after the outermost one.
func (s Shape) PerRow() int64 {
	n := int64(1)
	for _, d := range s[min(1, len(s)):] {
		n *= d.N
	}
	return n
}

func (s Shape) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Type is a value's element type and shape.
type Type struct {
	DType DType `json:"dtype"`
	Shape Shape `json:"shape"`
}

func (t Type) String() string { return t.DType.String() + t.Shape.String() }

package cpu

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/weft-ml/weft/ops/ref"
)

// TestRoPEKeyCoversEveryParameter: changing any field of ref.RoPE changes
// keyOf, so a step never reuses another rotation's tables; a field added
// to ref.RoPE fails here until keyOf names it.
func TestRoPEKeyCoversEveryParameter(t *testing.T) {
	base := ref.RoPE{Dims: 64, Base: 10000, FreqScale: 1}
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		r := base
		f := reflect.ValueOf(&r).Elem().Field(i)
		switch f.Kind() {
		case reflect.Int:
			f.SetInt(f.Int() + 2)
		case reflect.Float32:
			f.SetFloat(f.Float() + 0.5)
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Array:
			f.Index(1).SetFloat(3)
		case reflect.Slice:
			f.Set(reflect.ValueOf(make([]float32, 32)))
		default:
			t.Fatalf("ref.RoPE.%s: a %s field this test cannot vary; add it to keyOf and here", typ.Field(i).Name, f.Kind())
		}
		assert.NotEqual(t, keyOf(base), keyOf(r), "ref.RoPE.%s does not change keyOf", typ.Field(i).Name)
	}
	// The same factors weight, by where it lives, is the same key.
	w := make([]float32, 32)
	assert.Equal(t, keyOf(ref.RoPE{Dims: 64, Factors: w}), keyOf(ref.RoPE{Dims: 64, Factors: w}))
}

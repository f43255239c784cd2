package simd

import (
	"slices"
	"testing"
)

func TestChooseHonoursEnvironment(t *testing.T) {
	t.Setenv("WEFT_PUREGO", "1")
	if got := choose().name; got != pureGo {
		t.Errorf("WEFT_PUREGO=1 chose %q, want %q", got, pureGo)
	}
	t.Setenv("WEFT_PUREGO", "")
	names := Variants()
	if got := choose().name; got != names[len(names)-1] {
		t.Errorf("chose %q, want the best of %v", got, names)
	}
}

func TestVariants(t *testing.T) {
	names := Variants()
	if names[0] != pureGo {
		t.Errorf("Variants() = %v, want %q first", names, pureGo)
	}
	if !slices.Contains(names, Variant()) {
		t.Errorf("Variant() = %q, not among %v", Variant(), names)
	}
	if _, ok := withVariant("no-such-isa"); ok {
		t.Error("withVariant accepted an unknown name")
	}
	t.Logf("variants %v, active %s", names, Variant())
}

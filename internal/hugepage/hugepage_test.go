package hugepage

import (
	"runtime"
	"testing"
	"unsafe"
)

func TestAllocIsAlignedZeroedAndFreed(t *testing.T) {
	for _, size := range []int{0, 1, Size - 1, Size + 12345} {
		b, free, err := Alloc(size)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != size {
			t.Fatalf("len %d, want %d", len(b), size)
		}
		if runtime.GOOS == "linux" && size > 0 && uintptr(unsafe.Pointer(&b[0]))%Size != 0 {
			t.Fatalf("size %d: start %p not aligned to a huge page", size, &b[0])
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("size %d: byte %d is %d", size, i, b[i])
			}
			b[i] = byte(i)
		}
		Advise(b)
		if err := free(); err != nil {
			t.Fatal(err)
		}
	}
}

//go:build linux && (amd64 || arm64)

package vk

import (
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// chunkSize is the size of one arena chunk; allocations larger than a
// chunk get a chunk of their own.
const chunkSize = 64 << 10

// arena is call scratch memory outside the Go heap (anonymous mmap).
// Every structure, array and string handed to Vulkan is built in an arena,
// so Vulkan never sees a Go pointer and the garbage collector never sees
// Vulkan's. An arena is used by one goroutine at a time (getArena/putArena)
// and reset after each call; its chunks are kept for reuse.
type arena struct {
	chunks [][]byte // chunks[0] is the reusable base chunk
	cur    int      // index of the chunk being filled
	off    int      // next free byte in chunks[cur]
	big    [][]byte // one-off chunks for large allocations, unmapped on reset
}

var arenas struct {
	sync.Mutex
	free []*arena
}

func getArena() *arena {
	arenas.Lock()
	defer arenas.Unlock()
	if n := len(arenas.free); n > 0 {
		a := arenas.free[n-1]
		arenas.free = arenas.free[:n-1]
		return a
	}
	return &arena{}
}

func putArena(a *arena) {
	a.reset()
	arenas.Lock()
	arenas.free = append(arenas.free, a)
	arenas.Unlock()
}

func mmapChunk(n int) []byte {
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		// As with the Go runtime's own allocator, running out of address
		// space for a few pages of scratch memory is fatal.
		panic("vk: cannot map call arena: " + err.Error())
	}
	return mem
}

// reset zeroes what was used and unmaps the one-off chunks.
func (a *arena) reset() {
	for i := 0; i <= a.cur && i < len(a.chunks); i++ {
		end := len(a.chunks[i])
		if i == a.cur {
			end = a.off
		}
		clear(a.chunks[i][:end])
	}
	for _, b := range a.big {
		_ = unix.Munmap(b)
	}
	a.big = a.big[:0]
	a.cur, a.off = 0, 0
}

// alloc returns n zeroed bytes aligned to 8.
func (a *arena) alloc(n int) unsafe.Pointer {
	if n <= 0 {
		n = 1
	}
	n = (n + 7) &^ 7
	if n > chunkSize/2 {
		b := mmapChunk(n)
		a.big = append(a.big, b)
		return unsafe.Pointer(&b[0])
	}
	if len(a.chunks) == 0 {
		a.chunks = append(a.chunks, mmapChunk(chunkSize))
	}
	if a.off+n > chunkSize {
		a.cur++
		a.off = 0
		if a.cur == len(a.chunks) {
			a.chunks = append(a.chunks, mmapChunk(chunkSize))
		}
	}
	p := unsafe.Pointer(&a.chunks[a.cur][a.off])
	a.off += n
	return p
}

// addr is the address of p as Vulkan sees it.
func addr(p unsafe.Pointer) uintptr { return uintptr(p) }

// newIn allocates one zeroed T in the arena.
func newIn[T any](a *arena) *T {
	var zero T
	return (*T)(a.alloc(int(unsafe.Sizeof(zero))))
}

// sliceIn allocates n zeroed Ts in the arena (nil for n == 0).
func sliceIn[T any](a *arena, n int) []T {
	if n == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*T)(a.alloc(n*int(unsafe.Sizeof(zero)))), n)
}

// copyIn copies s into the arena and returns the copy's address (0 for an
// empty slice). T must not contain Go pointers.
func copyIn[T any](a *arena, s []T) uintptr {
	if len(s) == 0 {
		return 0
	}
	d := sliceIn[T](a, len(s))
	copy(d, s)
	return addr(unsafe.Pointer(&d[0]))
}

// cstr copies s into the arena as a NUL-terminated string.
func (a *arena) cstr(s string) uintptr {
	b := unsafe.Slice((*byte)(a.alloc(len(s)+1)), len(s)+1)
	copy(b, s)
	return addr(unsafe.Pointer(&b[0]))
}

// cstrs builds a const char* const* array of strings.
func (a *arena) cstrs(ss []string) uintptr {
	if len(ss) == 0 {
		return 0
	}
	arr := sliceIn[uintptr](a, len(ss))
	for i, s := range ss {
		arr[i] = a.cstr(s)
	}
	return addr(unsafe.Pointer(&arr[0]))
}

// ptrOf is the arena address of *p.
func ptrOf[T any](p *T) uintptr { return addr(unsafe.Pointer(p)) }

// goString reads a NUL-terminated C string of at most len(b) bytes.
func goString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

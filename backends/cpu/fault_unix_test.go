//go:build unix

package cpu

import (
	"bytes"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/testenv"
	"github.com/weft-ml/weft/model"
)

// truncatedMapping maps a one-page file with flags, then truncates the
// file to nothing: reading the mapping raises SIGBUS.
func truncatedMapping(t *testing.T, flags int) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "weights")
	require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte{7}, os.Getpagesize()), 0o644))
	fh, err := os.Open(path)
	require.NoError(t, err)
	defer fh.Close()
	data, err := unix.Mmap(int(fh.Fd()), 0, os.Getpagesize(), unix.PROT_READ, flags)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Munmap(data) })
	require.NoError(t, os.Truncate(path, 0))
	return data
}

func onWorker() bool { return bytes.Contains(debug.Stack(), []byte("(*pool).work")) }

// faultJob reads data on a pool worker, while the caller's share waits for
// that read: the fault is always a worker's.
type faultJob struct {
	data    []byte
	tried   atomic.Bool
	sink    byte
	byPanic any // a plain panic instead of a fault, when set
}

func (j *faultJob) run(_, _, _ int) {
	if !onWorker() {
		for deadline := time.Now().Add(10 * time.Second); !j.tried.Load() && time.Now().Before(deadline); {
			goruntime.Gosched()
		}
		return
	}
	defer j.tried.Store(true)
	if j.byPanic != nil {
		panic(j.byPanic)
	}
	j.sink += j.data[0]
}

// recovered runs parallelFor and returns what it panicked with.
func recovered(n int, j job) (r any) {
	defer func() { r = recover() }()
	parallelFor(n, 2, 1, j)
	return nil
}

// TestWorkerFaultIsReraised faults on a pool worker, through a shared and
// a private mapping: the worker survives, the caller gets the fault as a
// panic it can recover (State.Run does), and the pool keeps working.
func TestWorkerFaultIsReraised(t *testing.T) {
	if workers.size < 1 {
		t.Skip("no pool workers (GOMAXPROCS 1)")
	}
	for name, flags := range map[string]int{"MAP_SHARED": unix.MAP_SHARED, "MAP_PRIVATE": unix.MAP_PRIVATE} {
		t.Run(name, func(t *testing.T) {
			data := truncatedMapping(t, flags)
			for range 3 {
				j := &faultJob{data: data}
				r := recovered(2, j)
				require.True(t, j.tried.Load(), "no worker took a chunk")
				f, ok := r.(*failure)
				require.True(t, ok, "recovered %T %v, want the worker's *failure", r, r)
				re, ok := f.value.(goruntime.Error)
				require.True(t, ok, "%T", f.value)
				a, ok := re.(interface{ Addr() uintptr })
				require.True(t, ok, "a fault carries its address: %v", re)
				assert.Equal(t, uintptr(unsafe.Pointer(&data[0])), a.Addr())
				assert.Contains(t, string(f.stack), "faultJob")
			}
			checkPoolWorks(t)
		})
	}
	t.Run("plain panic", func(t *testing.T) {
		r := recovered(2, &faultJob{byPanic: "boom"})
		f, ok := r.(*failure)
		require.True(t, ok, "%T", r)
		assert.Equal(t, "boom", f.value)
		checkPoolWorks(t)
	})
}

// checkPoolWorks runs a parallel sum that a worker must share: the
// caller's chunk waits until a worker has run one (a dead worker would
// leave it waiting until the deadline).
func checkPoolWorks(t *testing.T) {
	t.Helper()
	var sum, byWorker atomic.Int64
	j := funcJob(func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			sum.Add(int64(i))
		}
		if onWorker() {
			byWorker.Add(1)
			return
		}
		for deadline := time.Now().Add(10 * time.Second); byWorker.Load() == 0 && time.Now().Before(deadline); {
			goruntime.Gosched()
		}
	})
	for range 20 {
		parallelFor(1000, 4, 1, j)
	}
	assert.Equal(t, int64(20*999*1000/2), sum.Load())
	assert.Positive(t, byWorker.Load(), "no worker took part")
}

// TestRunFaultBreaksState truncates the mapped model under a State: Run
// returns a FaultError naming the file and the weight, every later Run
// the same error; a fresh State of the same program over the restored
// file runs (the failed Run left the pool usable).
func TestRunFaultBreaksState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	orig, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "testdata", "stories260K.gguf"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, orig, 0o644))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	l, err := model.Lower(f)
	require.NoError(t, err)
	p, err := Compile(l.Graph, f, Options{MaxTokens: 8, Threads: 2, ModelFile: path})
	require.NoError(t, err)
	s, err := p.NewState(32, KVF16)
	require.NoError(t, err)
	_, err = s.Run(seq(1, 4), seq(0, 4), []int32{3})
	require.NoError(t, err)

	require.NoError(t, os.Truncate(path, 0))
	_, err = s.Run([]int32{5}, seq(4, 1), []int32{0})
	var fe *FaultError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, path, fe.File)
	assert.False(t, fe.Packed)
	assert.Equal(t, "token_embd.weight", fe.Weight)
	assert.Equal(t, `node 4 (GetRows "inp_embd")`, fe.Node)
	assert.Regexp(t, `^the model file .*/m\.gguf changed or was truncated while running \(memory fault at 0x[0-9a-f]+ reading weight "token_embd\.weight" in node 4 \(GetRows "inp_embd"\)\): restore it and restart$`, err.Error())
	assert.Same(t, err, s.Broken())
	_, again := s.Run([]int32{5}, seq(4, 1), []int32{0})
	assert.Same(t, err, again, "a broken state returns its error")

	require.NoError(t, os.WriteFile(path, orig, 0o644)) // same inode: the mapping sees it again
	fresh, err := p.NewState(32, KVF16)
	require.NoError(t, err)
	for i := range 4 {
		_, err = fresh.Run([]int32{int32(i + 1)}, seq(i, 1), []int32{0})
		require.NoError(t, err)
	}
}

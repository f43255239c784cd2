package runtime

import (
	"fmt"
	"hash/crc32"
	"runtime/debug"
	"sync/atomic"
)

// The side file's policy (docs/decisions.md, "File safety"): the compiler
// records the CRC-32C of every byte; a load checks a sampled fingerprint at
// once (a wrong or stale side file is refused before anything runs) and the
// full checksum on a background goroutine while the tokenizer and the first
// batch run. A session returns no result before that check has passed, so
// damaged bytes anywhere in the file are an error, never silent wrong text.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// packedCRC is the full checksum recorded in the plan.
func packedCRC(b []byte) string {
	return fmt.Sprintf("crc32c:%08x", crc32.Checksum(b, castagnoli))
}

// packedCheck verifies a mapped side file in the background.
type packedCheck struct {
	done    chan struct{} // closed when the check has finished; nil: none started
	stop    atomic.Bool
	err     error // valid once done is closed
	started bool
}

// start checksums data against want on a goroutine. A fault while reading
// (the file truncated under the mapping) is an error, not a crash.
func (c *packedCheck) start(data []byte, want, path string) {
	c.done, c.started = make(chan struct{}), true
	go func() {
		defer close(c.done)
		c.err = c.verify(data, want, path)
	}()
}

func (c *packedCheck) verify(data []byte, want, path string) (err error) {
	debug.SetPanicOnFault(true)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the repacked weights %s changed or were truncated while loading (%v): restore the file or %s", path, r, recompile)
		}
	}()
	const chunk = 4 << 20
	var crc uint32
	for off := 0; off < len(data); off += chunk {
		if c.stop.Load() {
			return nil
		}
		crc = crc32.Update(crc, castagnoli, data[off:min(off+chunk, len(data))])
	}
	if got := fmt.Sprintf("crc32c:%08x", crc); got != want {
		return fmt.Errorf("the repacked weights %s are damaged (checksum %s, the plan recorded %s): %s", path, got, want, recompile)
	}
	return nil
}

// wait blocks until the check has finished and returns its verdict; it
// returns at once when no check was started.
func (c *packedCheck) wait() error {
	if !c.started {
		return nil
	}
	<-c.done
	return c.err
}

// halt stops the check early and waits for it, so the mapping can go.
func (c *packedCheck) halt() {
	if !c.started {
		return
	}
	c.stop.Store(true)
	<-c.done
}

// Verify waits for the background check of the plan's repacked weights
// (if any) and returns its verdict. Sessions call it before returning
// their first result.
func (m *Model) Verify() error { return m.Plan.check.wait() }

package sysmem

import "golang.org/x/sys/unix"

func available() (Memory, bool) {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil || n == 0 || n > 1<<62 {
		return Memory{}, false
	}
	return Memory{Bytes: int64(n), Source: "physical memory (hw.memsize)"}, true
}

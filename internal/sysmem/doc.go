// Package sysmem tells how much memory the process may still allocate, so
// that a session refuses a KV cache or activation arena the machine cannot
// hold with a message, before the allocation would kill the process (Go's
// "fatal error: out of memory", or the kernel's OOM killer).
//
// On Linux that is MemAvailable plus SwapFree from /proc/meminfo, lowered
// to the room left under the process's cgroup memory limit when one is
// set (the limit less the group's anonymous memory: page cache, such as a
// mapped model file, can be reclaimed). On macOS it is the physical memory
// (hw.memsize). Elsewhere it is unknown and callers only check that sizes
// do not overflow.
//
// The figure is a snapshot: pages that other sessions have allocated but
// not yet touched do not count against it.
package sysmem

package sysmem

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// noLimit is above any real cgroup limit (v1 reports "unlimited" as a
// page-rounded 2^63-1).
const noLimit = 1 << 60

func available() (Memory, bool) {
	m, ok := meminfo("/proc/meminfo")
	if cg, cok := cgroupRoom(); cok && (!ok || cg.Bytes < m.Bytes) {
		return cg, true
	}
	return m, ok
}

// meminfo reads MemAvailable + SwapFree.
func meminfo(path string) (Memory, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Memory{}, false
	}
	fields := parseKeyed(data, ":")
	avail, ok := fields["MemAvailable"]
	if !ok {
		return Memory{}, false
	}
	total := avail + fields["SwapFree"]
	return Memory{Bytes: total * 1024, Source: "MemAvailable + SwapFree in /proc/meminfo"}, true
}

// parseKeyed reads "key<sep> value [kB]" lines into a map.
func parseKeyed(data []byte, sep string) map[string]int64 {
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), sep)
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil && n >= 0 {
			out[strings.TrimSpace(k)] = n
		}
	}
	return out
}

// cgroupRoom is the room left under the process's cgroup memory limit:
// the limit less the group's anonymous memory.
func cgroupRoom() (Memory, bool) {
	own, _ := os.ReadFile("/proc/self/cgroup")
	var v1, v2 string
	for _, line := range strings.Split(string(own), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				v1 = parts[2]
			}
		}
	}
	// The mount may show the process's own group at its root (a cgroup
	// namespace), so try the recorded path, then the root.
	if v1 != "" {
		for _, dir := range []string{filepath.Join("/sys/fs/cgroup/memory", v1), "/sys/fs/cgroup/memory"} {
			if m, ok := room(dir, "memory.limit_in_bytes", "total_rss", "cgroup v1 memory.limit_in_bytes"); ok {
				return m, true
			}
		}
	}
	for _, dir := range []string{filepath.Join("/sys/fs/cgroup", v2), "/sys/fs/cgroup"} {
		if m, ok := room(dir, "memory.max", "anon", "cgroup memory.max"); ok {
			return m, true
		}
	}
	return Memory{}, false
}

func room(dir, limitFile, anonKey, source string) (Memory, bool) {
	raw, err := os.ReadFile(filepath.Join(dir, limitFile))
	if err != nil {
		return Memory{}, false
	}
	limit, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil || limit <= 0 || limit >= noLimit { // "max", or v1's "unlimited"
		return Memory{}, false
	}
	stat, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return Memory{}, false
	}
	used := parseKeyed(stat, " ")[anonKey]
	return Memory{Bytes: max(limit-used, 0), Source: source + " less the group's anonymous memory"}, true
}

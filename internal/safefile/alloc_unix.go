//go:build unix && !linux

package safefile

import (
	"os"

	"golang.org/x/sys/unix"
)

// allocate has no portable fallocate here: Reserve writes zeros instead.
func allocate(*os.File, int64) error { return unix.EOPNOTSUPP }

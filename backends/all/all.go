// Package all registers every built-in backend. Importing it (as runtime
// does) makes them available to backends.Lookup; a new backend adds one
// import line here.
package all

import (
	_ "github.com/weft-ml/weft/backends/cpu"    // the CPU backend
	_ "github.com/weft-ml/weft/backends/vulkan" // the Vulkan backend (linux/amd64, linux/arm64)
)

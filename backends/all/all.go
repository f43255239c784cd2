package all

import (
	_ "github.com/weft-ml/weft/backends/cpu"    // the CPU backend
	_ "github.com/weft-ml/weft/backends/vulkan" // the Vulkan backend (linux/amd64, linux/arm64)
)

// Package backends defines what a compute backend offers the compiler and
// runtime. Implementations live in sub-packages: backends/cpu (pure Go
// today; generated assembly kernels later) and, later, backends/vulkan.
package backends

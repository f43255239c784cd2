// Package vk is weft's thin Vulkan binding: the part of the Vulkan API a
// compute runtime needs, loaded from libvulkan.so.1 at run time with
// github.com/ebitengine/purego, so builds need neither cgo nor Vulkan
// headers and CGO_ENABLED=0 keeps working.
//
// Scope: instance creation (with the Khronos validation layer and a
// debug-utils messenger on request), physical-device queries with the
// Vulkan 1.1–1.3 feature and property chains, a device with one compute
// queue, memory, buffers, descriptor sets, pipeline layouts with push
// constants, compute pipelines from SPIR-V with specialization constants,
// pipeline caches, command pools and buffers, barriers, fences, timeline
// semaphores and timestamp queries. Nothing graphical.
//
// Memory rules. Every structure handed to Vulkan is written into a call
// arena: memory obtained from mmap, outside the Go heap. Pointers inside
// those structures point into the same arena, so no Go pointer is ever
// stored into memory that Vulkan reads, and nothing Vulkan sees can move or
// be collected during a call. The arena is reused; a call allocates no C
// memory. Mirrors of C structures are laid out exactly as the C ABI lays
// them out on 64-bit platforms (layout_test.go checks sizes and offsets
// against the values of the Vulkan 1.3 headers).
//
// Errors. Every VkResult other than VK_SUCCESS (and the documented
// non-error codes such as VK_TIMEOUT where a call can return them) becomes
// an *Error naming the call and the code; the binding never panics on a
// Vulkan result. A missing loader gives ErrNoLoader's message.
package vk

// Package vulkan is weft's Vulkan compute layer: a Device (one physical
// device, one compute queue), device buffers with staged upload and
// download, compute kernels made from embedded SPIR-V, and Programs — a
// sequence of dispatches and barriers recorded once into one command buffer
// and submitted as often as needed (a decode step recorded once and
// re-submitted).
//
// It sits on package vk, weft's own binding, which loads libvulkan.so.1 at
// run time: builds need neither cgo nor Vulkan headers. The graph executor
// (the backend seam) is built on top of this package; it does not know
// about graphs.
//
// Devices lists what the loader sees (for `graphrun --list-devices`);
// Open(index, Options{Validation: true}) turns the Khronos validation layer
// on, which every test does. Package vulkantest opens a device for tests
// and fails them on any validation message.
package vulkan

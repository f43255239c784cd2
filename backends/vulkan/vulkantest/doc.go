// Package vulkantest opens Vulkan devices for tests: the Khronos
// validation layer is on whenever it is installed, any validation or
// driver warning or error fails the test, and a test is skipped only where
// there is no Vulkan loader or no device at all.
package vulkantest

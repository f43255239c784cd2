package vk

import "fmt"

// Result is a VkResult.
type Result int32

// The VkResult codes a compute runtime meets.
const (
	Success                   Result = 0
	NotReady                  Result = 1
	Timeout                   Result = 2
	EventSet                  Result = 3
	EventReset                Result = 4
	Incomplete                Result = 5
	ErrorOutOfHostMemory      Result = -1
	ErrorOutOfDeviceMemory    Result = -2
	ErrorInitializationFailed Result = -3
	ErrorDeviceLost           Result = -4
	ErrorMemoryMapFailed      Result = -5
	ErrorLayerNotPresent      Result = -6
	ErrorExtensionNotPresent  Result = -7
	ErrorFeatureNotPresent    Result = -8
	ErrorIncompatibleDriver   Result = -9
	ErrorTooManyObjects       Result = -10
	ErrorFormatNotSupported   Result = -11
	ErrorFragmentedPool       Result = -12
	ErrorUnknown              Result = -13
	ErrorOutOfPoolMemory      Result = -1000069000
	ErrorInvalidExternalHndl  Result = -1000072003
	ErrorFragmentation        Result = -1000161000
	ErrorInvalidCaptureAddr   Result = -1000257000
	PipelineCompileRequired   Result = 1000297000
	ErrorValidationFailed     Result = -1000011001
)

var resultNames = map[Result]string{
	Success:                   "VK_SUCCESS",
	NotReady:                  "VK_NOT_READY",
	Timeout:                   "VK_TIMEOUT",
	EventSet:                  "VK_EVENT_SET",
	EventReset:                "VK_EVENT_RESET",
	Incomplete:                "VK_INCOMPLETE",
	ErrorOutOfHostMemory:      "VK_ERROR_OUT_OF_HOST_MEMORY",
	ErrorOutOfDeviceMemory:    "VK_ERROR_OUT_OF_DEVICE_MEMORY",
	ErrorInitializationFailed: "VK_ERROR_INITIALIZATION_FAILED",
	ErrorDeviceLost:           "VK_ERROR_DEVICE_LOST",
	ErrorMemoryMapFailed:      "VK_ERROR_MEMORY_MAP_FAILED",
	ErrorLayerNotPresent:      "VK_ERROR_LAYER_NOT_PRESENT",
	ErrorExtensionNotPresent:  "VK_ERROR_EXTENSION_NOT_PRESENT",
	ErrorFeatureNotPresent:    "VK_ERROR_FEATURE_NOT_PRESENT",
	ErrorIncompatibleDriver:   "VK_ERROR_INCOMPATIBLE_DRIVER",
	ErrorTooManyObjects:       "VK_ERROR_TOO_MANY_OBJECTS",
	ErrorFormatNotSupported:   "VK_ERROR_FORMAT_NOT_SUPPORTED",
	ErrorFragmentedPool:       "VK_ERROR_FRAGMENTED_POOL",
	ErrorUnknown:              "VK_ERROR_UNKNOWN",
	ErrorOutOfPoolMemory:      "VK_ERROR_OUT_OF_POOL_MEMORY",
	ErrorInvalidExternalHndl:  "VK_ERROR_INVALID_EXTERNAL_HANDLE",
	ErrorFragmentation:        "VK_ERROR_FRAGMENTATION",
	ErrorInvalidCaptureAddr:   "VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS",
	PipelineCompileRequired:   "VK_PIPELINE_COMPILE_REQUIRED",
	ErrorValidationFailed:     "VK_ERROR_VALIDATION_FAILED_EXT",
}

func (r Result) String() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("VkResult(%d)", int32(r))
}

// Error is a failed Vulkan call.
type Error struct {
	Call   string // the Vulkan command, e.g. "vkAllocateMemory"
	Code   Result
	Detail string // optional context
}

func (e *Error) Error() string {
	s := fmt.Sprintf("vulkan: %s: %s", e.Call, e.Code)
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

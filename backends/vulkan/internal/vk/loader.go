//go:build linux && (amd64 || arm64)

package vk

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ebitengine/purego"
)

// LoaderName is the shared library the binding opens.
const LoaderName = "libvulkan.so.1"

// ErrNoLoader is returned (wrapped) when libvulkan.so.1 cannot be opened.
// ErrNoDriver is returned (wrapped) when the loader works but no driver
// (ICD) is installed: vkCreateInstance answers VK_ERROR_INCOMPATIBLE_DRIVER.
var ErrNoDriver = errors.New("no Vulkan driver: the loader found no ICD (install your GPU's Vulkan driver, or mesa-vulkan-drivers for the lavapipe CPU device)")

var ErrNoLoader = errors.New("no Vulkan loader (" + LoaderName + "): install libvulkan1 (Debian/Ubuntu) or your GPU driver's Vulkan loader, plus a driver (mesa-vulkan-drivers for the lavapipe CPU device)")

var loader struct {
	once sync.Once
	err  error
	lib  uintptr
	// global commands, valid without an instance
	getInstanceProcAddr                  uintptr
	enumerateInstanceVersion             uintptr
	enumerateInstanceLayerProperties     uintptr
	enumerateInstanceExtensionProperties uintptr
	createInstance                       uintptr
}

// Load opens the Vulkan loader once. Every entry point of the package calls
// it; calling it first only gives an early, clear error.
func Load() error {
	loader.once.Do(func() {
		lib, err := purego.Dlopen(LoaderName, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			loader.err = fmt.Errorf("%w: %v", ErrNoLoader, err)
			return
		}
		gipa, err := purego.Dlsym(lib, "vkGetInstanceProcAddr")
		if err != nil || gipa == 0 {
			loader.err = fmt.Errorf("%w: vkGetInstanceProcAddr missing: %v", ErrNoLoader, err)
			return
		}
		loader.lib, loader.getInstanceProcAddr = lib, gipa
		a := getArena()
		defer putArena(a)
		load := func(name string) uintptr {
			r, _, _ := purego.SyscallN(gipa, 0, a.cstr(name))
			return r
		}
		loader.enumerateInstanceVersion = load("vkEnumerateInstanceVersion")
		loader.enumerateInstanceLayerProperties = load("vkEnumerateInstanceLayerProperties")
		loader.enumerateInstanceExtensionProperties = load("vkEnumerateInstanceExtensionProperties")
		loader.createInstance = load("vkCreateInstance")
		if loader.createInstance == 0 || loader.enumerateInstanceLayerProperties == 0 || loader.enumerateInstanceExtensionProperties == 0 {
			loader.err = fmt.Errorf("%w: the loader lacks the Vulkan 1.0 global commands", ErrNoLoader)
		}
	})
	return loader.err
}

// procTable names the commands of one dispatch level and where to store
// them. Optional commands may be missing (their address stays 0).
type procEntry struct {
	name     string
	addr     *uintptr
	optional bool
}

// resolve looks every entry up through get, which returns 0 for a command
// the implementation lacks.
func resolve(level string, entries []procEntry, get func(name uintptr) uintptr) error {
	a := getArena()
	defer putArena(a)
	var missing []string
	for _, e := range entries {
		*e.addr = get(a.cstr(e.name))
		if *e.addr == 0 && !e.optional {
			missing = append(missing, e.name)
		}
		a.reset()
	}
	if len(missing) > 0 {
		return fmt.Errorf("vulkan: %s lacks required commands %v (Vulkan 1.2 or newer is needed)", level, missing)
	}
	return nil
}

// call invokes a C function pointer with integer arguments and returns its
// VkResult. fn must not be 0 (callers check optional commands first).
func call(fn uintptr, args ...uintptr) Result {
	r, _, _ := purego.SyscallN(fn, args...)
	return Result(int32(uint32(r)))
}

// callVoid invokes a C function that returns nothing.
func callVoid(fn uintptr, args ...uintptr) {
	purego.SyscallN(fn, args...)
}

// check turns a VkResult into an error naming the call.
func check(name string, r Result) error {
	if r == Success {
		return nil
	}
	return &Error{Call: name, Code: r}
}

// missing is the error for an optional command the implementation lacks.
func missing(name string) error {
	return &Error{Call: name, Code: ErrorFeatureNotPresent, Detail: "command not provided by this driver"}
}

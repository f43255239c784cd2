//go:build linux && (amd64 || arm64)

package vk

import (
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// ValidationLayer is the Khronos validation layer's name.
const ValidationLayer = "VK_LAYER_KHRONOS_validation"

const extDebugUtils = "VK_EXT_debug_utils"

// Message is one debug-utils message (from the validation layer or the
// driver).
type Message struct {
	Severity Flags // SeverityInfo, SeverityWarning or SeverityError
	Types    Flags // MessageGeneral, MessageValidation, MessagePerformance
	ID       string
	Text     string
}

func (m Message) String() string {
	sev := "info"
	switch {
	case m.Severity&SeverityError != 0:
		sev = "error"
	case m.Severity&SeverityWarning != 0:
		sev = "warning"
	}
	return fmt.Sprintf("vulkan %s [%s]: %s", sev, m.ID, m.Text)
}

// InstanceOptions configures CreateInstance.
type InstanceOptions struct {
	AppName string
	// Validation enables VK_LAYER_KHRONOS_validation, and with it a
	// debug-utils messenger that passes warnings and errors to OnMessage.
	// It is an error if the layer is not installed.
	Validation bool
	// OnMessage receives debug-utils messages (required with Validation).
	// It is called on the thread of the Vulkan call that caused the
	// message and must not call Vulkan.
	OnMessage func(Message)
}

// Instance is a VkInstance with its instance-level commands.
type Instance struct {
	h          InstanceHandle
	apiVersion uint32
	messenger  debugMessenger
	sinkID     uintptr

	destroyInstance                        uintptr
	enumeratePhysicalDevices               uintptr
	getPhysicalDeviceProperties2           uintptr
	getPhysicalDeviceFeatures2             uintptr
	getCooperativeMatrixPropertiesNV       uintptr // optional: VK_NV_cooperative_matrix
	getPhysicalDeviceMemoryProperties2     uintptr
	getPhysicalDeviceQueueFamilyProperties uintptr
	enumerateDeviceExtensionProperties     uintptr
	createDevice                           uintptr
	getDeviceProcAddr                      uintptr
	createDebugUtilsMessenger              uintptr
	destroyDebugUtilsMessenger             uintptr
}

// InstanceVersion returns the loader's instance-level API version.
func InstanceVersion() (APIVersion, error) {
	if err := Load(); err != nil {
		return 0, err
	}
	if loader.enumerateInstanceVersion == 0 {
		return APIVersion(MakeAPIVersion(1, 0, 0)), nil
	}
	a := getArena()
	defer putArena(a)
	v := newIn[uint32](a)
	if err := check("vkEnumerateInstanceVersion", call(loader.enumerateInstanceVersion, ptrOf(v))); err != nil {
		return 0, err
	}
	return APIVersion(*v), nil
}

// InstanceLayers lists the installed instance layers.
func InstanceLayers() ([]string, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	a := getArena()
	defer putArena(a)
	n := newIn[uint32](a)
	if err := check("vkEnumerateInstanceLayerProperties", call(loader.enumerateInstanceLayerProperties, ptrOf(n), 0)); err != nil {
		return nil, err
	}
	props := sliceIn[layerProperties](a, int(*n))
	if len(props) == 0 {
		return nil, nil
	}
	r := call(loader.enumerateInstanceLayerProperties, ptrOf(n), ptrOf(&props[0]))
	if r != Incomplete {
		if err := check("vkEnumerateInstanceLayerProperties", r); err != nil {
			return nil, err
		}
	}
	names := make([]string, int(*n))
	for i := range names {
		names[i] = goString(props[i].layerName[:])
	}
	return names, nil
}

// instanceExtensions lists the extensions of the loader and implicit layers
// (layer == "") or of one layer.
func instanceExtensions(layer string) ([]string, error) {
	a := getArena()
	defer putArena(a)
	var lname uintptr
	if layer != "" {
		lname = a.cstr(layer)
	}
	n := newIn[uint32](a)
	if err := check("vkEnumerateInstanceExtensionProperties", call(loader.enumerateInstanceExtensionProperties, lname, ptrOf(n), 0)); err != nil {
		return nil, err
	}
	props := sliceIn[extensionProperties](a, int(*n))
	if len(props) == 0 {
		return nil, nil
	}
	r := call(loader.enumerateInstanceExtensionProperties, lname, ptrOf(n), ptrOf(&props[0]))
	if r != Incomplete {
		if err := check("vkEnumerateInstanceExtensionProperties", r); err != nil {
			return nil, err
		}
	}
	names := make([]string, int(*n))
	for i := range names {
		names[i] = goString(props[i].extensionName[:])
	}
	return names, nil
}

// HasValidationLayer reports whether VK_LAYER_KHRONOS_validation is
// installed.
func HasValidationLayer() bool {
	layers, err := InstanceLayers()
	return err == nil && slices.Contains(layers, ValidationLayer)
}

// CreateInstance creates an instance for Vulkan 1.3 (or the loader's
// version if older; at least 1.2 is needed).
func CreateInstance(opts InstanceOptions) (*Instance, error) {
	ver, err := InstanceVersion()
	if err != nil {
		return nil, err
	}
	if ver.Major() == 1 && ver.Minor() < 2 {
		return nil, fmt.Errorf("vulkan: the loader supports Vulkan %s; weft needs 1.2 or newer", ver)
	}
	api := min(uint32(ver)&^0xfff, MakeAPIVersion(1, 3, 0))

	var layers, exts []string
	if opts.Validation {
		if !HasValidationLayer() {
			return nil, fmt.Errorf("vulkan: validation requested but %s is not installed (Debian: vulkan-validationlayers)", ValidationLayer)
		}
		if opts.OnMessage == nil {
			return nil, fmt.Errorf("vulkan: validation requested without a message handler")
		}
		layers = append(layers, ValidationLayer)
	}
	if opts.OnMessage != nil {
		avail, err := instanceExtensions("")
		if err != nil {
			return nil, err
		}
		if opts.Validation {
			more, err := instanceExtensions(ValidationLayer)
			if err != nil {
				return nil, err
			}
			avail = append(avail, more...)
		}
		if !slices.Contains(avail, extDebugUtils) {
			return nil, fmt.Errorf("vulkan: %s is not available: cannot report validation messages", extDebugUtils)
		}
		exts = append(exts, extDebugUtils)
	}

	a := getArena()
	defer putArena(a)
	app := newIn[applicationInfo](a)
	app.sType = stApplicationInfo
	name := opts.AppName
	if name == "" {
		name = "weft"
	}
	app.pApplicationName = a.cstr(name)
	app.pEngineName = a.cstr("weft")
	app.apiVersion = api
	ci := newIn[instanceCreateInfo](a)
	ci.sType = stInstanceCreateInfo
	ci.pApplicationInfo = ptrOf(app)
	ci.enabledLayerCount = uint32(len(layers))
	ci.ppEnabledLayerNames = a.cstrs(layers)
	ci.enabledExtensionCount = uint32(len(exts))
	ci.ppEnabledExtensionNames = a.cstrs(exts)

	var sinkID uintptr
	if opts.OnMessage != nil {
		// Chained into the create info, the messenger also reports on
		// vkCreateInstance and vkDestroyInstance themselves.
		sinkID = addSink(opts.OnMessage)
		ci.pNext = ptrOf(messengerInfo(a, sinkID))
	}
	out := newIn[InstanceHandle](a)
	if r := call(loader.createInstance, ptrOf(ci), 0, ptrOf(out)); r != Success {
		removeSink(sinkID)
		if r == ErrorIncompatibleDriver {
			return nil, fmt.Errorf("%w (%w)", ErrNoDriver, check("vkCreateInstance", r))
		}
		return nil, check("vkCreateInstance", r)
	}
	in := &Instance{h: *out, apiVersion: api, sinkID: sinkID}
	gipa := func(name uintptr) uintptr {
		r, _, _ := purego.SyscallN(loader.getInstanceProcAddr, uintptr(in.h), name)
		return r
	}
	err = resolve("the Vulkan instance", []procEntry{
		{"vkDestroyInstance", &in.destroyInstance, false},
		{"vkEnumeratePhysicalDevices", &in.enumeratePhysicalDevices, false},
		{"vkGetPhysicalDeviceProperties2", &in.getPhysicalDeviceProperties2, false},
		{"vkGetPhysicalDeviceFeatures2", &in.getPhysicalDeviceFeatures2, false},
		{"vkGetPhysicalDeviceMemoryProperties2", &in.getPhysicalDeviceMemoryProperties2, false},
		{"vkGetPhysicalDeviceQueueFamilyProperties", &in.getPhysicalDeviceQueueFamilyProperties, false},
		{"vkEnumerateDeviceExtensionProperties", &in.enumerateDeviceExtensionProperties, false},
		{"vkCreateDevice", &in.createDevice, false},
		{"vkGetDeviceProcAddr", &in.getDeviceProcAddr, false},
		{"vkCreateDebugUtilsMessengerEXT", &in.createDebugUtilsMessenger, true},
		{"vkGetPhysicalDeviceCooperativeMatrixPropertiesNV", &in.getCooperativeMatrixPropertiesNV, true},
		{"vkDestroyDebugUtilsMessengerEXT", &in.destroyDebugUtilsMessenger, true},
	}, gipa)
	if err != nil {
		if in.destroyInstance != 0 {
			callVoid(in.destroyInstance, uintptr(in.h), 0)
		}
		removeSink(sinkID)
		return nil, err
	}
	if sinkID != 0 {
		if in.createDebugUtilsMessenger == 0 {
			in.Destroy()
			return nil, missing("vkCreateDebugUtilsMessengerEXT")
		}
		a.reset()
		m := newIn[debugMessenger](a)
		r := call(in.createDebugUtilsMessenger, uintptr(in.h), ptrOf(messengerInfo(a, sinkID)), 0, ptrOf(m))
		if err := check("vkCreateDebugUtilsMessengerEXT", r); err != nil {
			in.Destroy()
			return nil, err
		}
		in.messenger = *m
	}
	return in, nil
}

// APIVersion is the API version the instance was created for.
func (in *Instance) APIVersion() APIVersion { return APIVersion(in.apiVersion) }

// Destroy destroys the messenger and the instance. Every device must be
// destroyed first.
func (in *Instance) Destroy() {
	if in == nil || in.h == 0 {
		return
	}
	if in.messenger != 0 {
		callVoid(in.destroyDebugUtilsMessenger, uintptr(in.h), uintptr(in.messenger), 0)
		in.messenger = 0
	}
	callVoid(in.destroyInstance, uintptr(in.h), 0)
	in.h = 0
	removeSink(in.sinkID)
}

// ---- debug-utils messages ----

var sinks struct {
	sync.Mutex
	next uintptr
	m    map[uintptr]func(Message)
	cb   uintptr // the C callback, created once
}

func addSink(f func(Message)) uintptr {
	sinks.Lock()
	defer sinks.Unlock()
	if sinks.m == nil {
		sinks.m = map[uintptr]func(Message){}
		sinks.cb = purego.NewCallback(debugCallback)
	}
	sinks.next++
	sinks.m[sinks.next] = f
	return sinks.next
}

func removeSink(id uintptr) {
	if id == 0 {
		return
	}
	sinks.Lock()
	delete(sinks.m, id)
	sinks.Unlock()
}

// debugCallback is the PFN_vkDebugUtilsMessengerCallbackEXT. pUserData
// carries a sink number, never a Go pointer.
func debugCallback(severity, types uint32, data *debugUtilsCallbackData, user uintptr) uint32 {
	sinks.Lock()
	f := sinks.m[user]
	sinks.Unlock()
	if f == nil || data == nil {
		return 0
	}
	f(Message{Severity: severity, Types: types, ID: cString(data.pMessageIdName), Text: cString(data.pMessage)})
	return 0 // VK_FALSE: do not abort the call
}

// cString copies a NUL-terminated string from C memory.
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

func messengerInfo(a *arena, sinkID uintptr) *debugUtilsMessengerCreateInfo {
	mi := newIn[debugUtilsMessengerCreateInfo](a)
	mi.sType = stDebugUtilsMessengerCreate
	mi.messageSeverity = SeverityWarning | SeverityError
	mi.messageType = MessageGeneral | MessageValidation | MessagePerformance
	mi.pfnUserCallback = sinks.cb
	mi.pUserData = sinkID
	return mi
}

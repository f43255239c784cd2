//go:build linux && (amd64 || arm64)

package vulkantest

import (
	"errors"
	"sync"
	"testing"

	"github.com/weft-ml/weft/backends/vulkan"
	"github.com/weft-ml/weft/backends/vulkan/internal/vk"
)

// Open opens device 0 for t and closes it when t ends, failing t if the
// validation layer or the driver reported anything.
func Open(t testing.TB) *vulkan.Device {
	t.Helper()
	if err := vk.Load(); err != nil {
		t.Skipf("skipping Vulkan test: %v", err)
	}
	validation := vk.HasValidationLayer()
	if !validation {
		t.Logf("%s is not installed (Debian: vulkan-validationlayers): running without validation", vk.ValidationLayer)
	}
	var mu sync.Mutex
	var msgs []string
	d, err := vulkan.Open(0, vulkan.Options{Validation: validation, OnMessage: func(m vk.Message) {
		mu.Lock()
		msgs = append(msgs, m.String())
		mu.Unlock()
	}})
	if errors.Is(err, vulkan.ErrNoDevice) || errors.Is(err, vk.ErrNoDriver) {
		t.Skipf("skipping Vulkan test: %v", err)
	}
	if err != nil {
		t.Fatalf("opening Vulkan device 0: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("closing the device: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			t.Errorf("%s", m)
		}
	})
	return d
}

package main

import (
	"fmt"
	"io"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/runtime"
)

// measureBandwidth measures the memory decode streams the model's weights
// from (--bandwidth): a GPU backend's own memory, read by one of its
// kernels, where the backend that runs the model can measure it
// (backends.BandwidthMeter), else the host's with threads goroutines. It
// returns the rates (GB/s) and says whose memory they are: the device the
// model ran on, by name (runtime.Model.Device; the meter resolves device
// as loading did, WEFT_VULKAN_DEVICE included).
func measureBandwidth(backend string, device int, name string, threads, reps int, stderr io.Writer) (*runtime.Stat, string, error) {
	reps = max(reps, 1) // as Bench: at least one timed run
	if b, err := backends.Lookup(backend); err == nil {
		if meter, ok := b.(backends.BandwidthMeter); ok {
			of := fmt.Sprintf("%s device %d", backend, device)
			if name != "" {
				of = backend + ": " + name
			}
			fmt.Fprintf(stderr, "measuring the memory read bandwidth of %s\n", of)
			runs, err := meter.ReadBandwidth(device, reps)
			if err != nil {
				return nil, "", fmt.Errorf("--bandwidth: %w", err)
			}
			return runtime.SummarizeRuns(runs), of, nil
		}
	}
	of := fmt.Sprintf("host, %d threads", threads)
	fmt.Fprintf(stderr, "measuring the memory read bandwidth of the %s\n", of)
	s, err := runtime.ReadBandwidth(threads, reps)
	if err != nil {
		return nil, "", fmt.Errorf("--bandwidth: %w", err)
	}
	return s, of, nil
}

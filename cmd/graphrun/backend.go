package main

import (
	"flag"
	"fmt"
	"github.com/weft-ml/weft/internal/safemath"
	"io"
	goruntime "runtime"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/runtime"
)

// backendFlags choose where and how a model runs; shared by run, bench,
// chat and serve.
type backendFlags struct {
	backend   *string
	device    *int
	f16AsBF16 *bool
}

// f16AsBF16Help is --f16-as-bf16's help; the figures are docs/decisions.md's
// "F16 weights computed as BF16".
const f16AsBF16Help = "CPU backend: convert F16 matmul weights to BF16 at load and run the BF16 kernels " +
	"(ik_llama.cpp's -rtr does the same; faster with AVX-512, same memory). Logits move away from an F16 run's: " +
	"largest per-row ‖Δ‖/‖ref‖ 1.2e-2 (stories260K-F16) and 6.5e-3 (synth-15m-f16) against llama.cpp's F16 logits, 3.4e-3 and 4.9e-4 without it"

func addBackendFlags(fs *flag.FlagSet) backendFlags {
	return backendFlags{
		backend:   fs.String("backend", "cpu", "cpu, vulkan, or auto (vulkan where it loads the model, else cpu)"),
		device:    fs.Int("device", 0, "device of the backend (see --list-devices)"),
		f16AsBF16: fs.Bool("f16-as-bf16", false, f16AsBF16Help),
	}
}

// options fills the backend choice into o; a GGUF compiled in memory is
// placed for the chosen backend.
func (b backendFlags) options(o runtime.Options, stderr io.Writer) runtime.Options {
	o.Backend, o.Device, o.F16AsBF16 = *b.backend, *b.device, *b.f16AsBF16
	o.LoadProgress = uploadProgress(stderr)
	if o.Backend != runtime.AutoBackend {
		o.Compile.Backend = o.Backend
	}
	return o
}

// uploadProgress shows the upload of weights of 64 MiB and more to a
// device on one stderr line, in steps of 5%.
func uploadProgress(w io.Writer) func(done, total int64) {
	shown := -1
	return func(done, total int64) {
		if total < 64<<20 {
			return
		}
		pct := int(100 * done / total)
		if pct/5 == shown/5 && done < total {
			return
		}
		shown = pct
		fmt.Fprintf(w, "\ruploading weights: %3d%% (%d of %d MiB)", pct, done>>20, total>>20)
		if done >= total {
			fmt.Fprintln(w)
		}
	}
}

// noteBackend says on stderr which backend runs the model when it was not
// the one asked for.
func noteBackend(stderr io.Writer, m *runtime.Model) {
	for _, n := range m.BackendNotes {
		fmt.Fprintf(stderr, "graphrun: %s\n", n)
	}
}

// listDevices prints every device of every backend in this build.
func listDevices(w io.Writer) error {
	for _, name := range backends.Names() {
		e, err := backends.Lookup(name)
		if err != nil {
			return err
		}
		l, ok := e.(backends.DeviceLister)
		if !ok {
			fmt.Fprintf(w, "%-7s 0  %s (%d threads)\n", name, goruntime.GOARCH, goruntime.GOMAXPROCS(0))
			continue
		}
		devs, err := l.Devices()
		if err != nil {
			fmt.Fprintf(w, "%-7s -  none: %v\n", name, err)
			continue
		}
		if len(devs) == 0 {
			fmt.Fprintf(w, "%-7s -  none: the loader found no device\n", name)
		}
		for _, d := range devs {
			mem := ""
			if d.Memory > 0 {
				mem = fmt.Sprintf(", %.1f GiB", float64(d.Memory)/(1<<30))
			}
			fmt.Fprintf(w, "%-7s %d  %s (%s, %s%s)\n", name, d.Index, d.Name, d.Kind, d.Driver, mem)
		}
	}
	return nil
}

// noteKV says on stderr what the session's KV cache is and how much
// memory it holds (its real bytes: Q8_0 and Q4_0 blocks are 8.5 and 4.5
// bits a value).
func noteKV(stderr io.Writer, m *runtime.Model, s *runtime.Session, o runtime.SessionOptions) {
	kt, how := o.KVType, ""
	if kt == "" {
		kt = m.Plan.Run.KVType
	}
	if o.FlashAttn || m.Plan.Run.FlashAttn {
		how = ", flash attention"
		if o.FlashAcc == "f32" || (o.FlashAcc == "" && m.Plan.Run.FlashAcc == "f32") {
			how += " (float32 accumulator)"
		}
	}
	fmt.Fprintf(stderr, "KV cache %s%s: %s for %d positions\n", kt, how, safemath.Bytes(s.KVBytes()), s.Context())
}

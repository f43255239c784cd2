package runtime

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/weft-ml/weft/gguf"
)

// FuzzPlan feeds mutated plans and side files through everything a load
// does after reading the bytes: decoding and checking the plan, the side
// file's fingerprint, building the program against the real model and one
// small evaluation. Any panic or fault is a failure; errors are fine.
// Seeds: a plan of stories260K and of a repacked Q4_0 model with its side
// file. Run it with make fuzz.
func FuzzPlan(f *testing.F) {
	dir := f.TempDir()
	seeds := map[string]string{} // plan path -> model path
	p, err := CompileTo(stories(f), filepath.Join(dir, "s.plan"), CompileOptions{Ctx: 32, Batch: 8})
	if err != nil {
		f.Fatal(err)
	}
	p.Close()
	seeds[filepath.Join(dir, "s.plan")] = stories(f)
	q4 := synthQ4(f, dir, 3)
	if p, err = CompileTo(q4, filepath.Join(dir, "q.plan"), CompileOptions{Ctx: 32, Batch: 8}); err != nil {
		f.Fatal(err)
	}
	seeds[filepath.Join(dir, "q.plan")] = q4
	side := filepath.Join(dir, p.PackedFile)
	p.Close()

	models := map[string]*gguf.File{}
	for planPath, modelPath := range seeds {
		data, err := os.ReadFile(planPath)
		if err != nil {
			f.Fatal(err)
		}
		var sideBytes []byte
		if planPath == filepath.Join(dir, "q.plan") && side != dir {
			sideBytes, _ = os.ReadFile(side)
		}
		f.Add(data, sideBytes)
		m, err := gguf.Open(modelPath)
		if err != nil {
			f.Fatal(err)
		}
		defer m.Close()
		models[modelPath] = m
	}
	f.Fuzz(func(t *testing.T, data, side []byte) {
		p, err := decodePlan(data)
		if err != nil {
			return
		}
		if p.PackedFile != "" {
			if packedSum(side) != p.PackedSum || packedCRC(side) != p.PackedCRC {
				return
			}
			p.Packed = side
		}
		for path, file := range models {
			m, err := build(p, file, path, Options{Threads: 1})
			if err != nil {
				continue
			}
			s, err := m.NewSession(SessionOptions{Ctx: 16})
			if err != nil {
				continue
			}
			s.Eval([]int32{1, 2, 3}, false)
		}
	})
}

package tapdump

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/weft-ml/weft/internal/safefile"
)

// Format and Version identify a dump's index.
const (
	Format  = "weft-tensors"
	Version = 1
	// IndexFile is the index's name inside a dump folder.
	IndexFile = "index.json"
)

// Meta describes what a dump came from.
type Meta struct {
	Source  string `json:"source,omitempty"`  // the plan or model file
	Backend string `json:"backend,omitempty"` // the backend that ran it
	Pattern string `json:"pattern,omitempty"` // the tap pattern
	Prompt  string `json:"prompt,omitempty"`
}

// Entry is one tapped value of one batch.
type Entry struct {
	Step    int    `json:"step"` // the session's batch
	Pos     int    `json:"pos"`  // the batch's first position
	Node    int    `json:"node"`
	Name    string `json:"name"`
	Op      string `json:"op"`
	Layer   int    `json:"layer"`
	Backend string `json:"backend,omitempty"`
	Rows    int    `json:"rows"`
	Width   int    `json:"width"`
	File    string `json:"file"` // beside index.json
}

// index is index.json.
type index struct {
	Format  string  `json:"format"`
	Version int     `json:"version"`
	Tensors []Entry `json:"tensors"`
	Meta
}

// Writer writes a dump folder; Close writes its index.
type Writer struct {
	dir     string
	idx     index
	buf     []byte
	written map[string]bool
}

// Create starts a dump in dir, which must be absent or empty (a dump is
// never mixed with another's files).
func Create(dir string, m Meta) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if len(ents) > 0 {
		return nil, fmt.Errorf("dump folder %s is not empty: give a new or empty folder", dir)
	}
	return &Writer{dir: dir, idx: index{Format: Format, Version: Version, Meta: m, Tensors: []Entry{}}, written: map[string]bool{}}, nil
}

// Write stores v, e.Rows×e.Width values, as e (e.File is filled in).
func (w *Writer) Write(e Entry, v []float32) error {
	if len(v) != e.Rows*e.Width {
		return fmt.Errorf("tapdump: %q has %d values, not %d×%d", e.Name, len(v), e.Rows, e.Width)
	}
	e.File = fmt.Sprintf("%04d-%04d.f32", e.Step, e.Node)
	if w.written[e.File] {
		return fmt.Errorf("tapdump: node %d (%q) of step %d written twice", e.Node, e.Name, e.Step)
	}
	w.buf = w.buf[:0]
	for _, x := range v {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, math.Float32bits(x))
	}
	if err := os.WriteFile(filepath.Join(w.dir, e.File), w.buf, 0o644); err != nil {
		return err
	}
	w.written[e.File] = true
	w.idx.Tensors = append(w.idx.Tensors, e)
	return nil
}

// Len is the number of values written so far.
func (w *Writer) Len() int { return len(w.idx.Tensors) }

// Close writes the index; a folder without one is not a dump.
func (w *Writer) Close() error {
	b, err := json.MarshalIndent(w.idx, "", " ")
	if err != nil {
		return err
	}
	return safefile.WriteFile(filepath.Join(w.dir, IndexFile), append(b, '\n'))
}

// Dump is a dump folder read back.
type Dump struct {
	Dir     string
	Meta    Meta
	Entries []Entry
}

// maxIndex bounds index.json: a dump of every node of a large model over
// many steps is still far smaller.
const maxIndex = 1 << 30

// Read reads dir's index.
func Read(dir string) (*Dump, error) {
	data, err := safefile.ReadLimited(filepath.Join(dir, IndexFile), "tensor dump index", maxIndex)
	if err != nil {
		return nil, err
	}
	var idx index
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("%s: not a tensor dump index: %w", dir, err)
	}
	if idx.Format != Format || idx.Version != Version {
		return nil, fmt.Errorf("%s: format %q version %d, want %q version %d (written by graphrun --dump-tensors)", dir, idx.Format, idx.Version, Format, Version)
	}
	for i, e := range idx.Tensors {
		if e.Rows < 0 || e.Width < 0 || e.File == "" || filepath.Base(e.File) != e.File {
			return nil, fmt.Errorf("%s: entry %d (%q) is damaged", dir, i, e.Name)
		}
	}
	return &Dump{Dir: dir, Meta: idx.Meta, Entries: idx.Tensors}, nil
}

// Values reads entry e's values.
func (d *Dump) Values(e Entry) ([]float32, error) {
	want := int64(e.Rows) * int64(e.Width) * 4
	data, err := safefile.ReadLimited(filepath.Join(d.Dir, e.File), "tensor dump file", want)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != want {
		return nil, fmt.Errorf("%s: %s holds %d bytes, %q is %d×%d float32s", d.Dir, e.File, len(data), e.Name, e.Rows, e.Width)
	}
	v := make([]float32, len(data)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return v, nil
}

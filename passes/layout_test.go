package passes

import (
	"bytes"
	"testing"

	"github.com/weft-ml/weft/backends"
	"github.com/weft-ml/weft/graph"
)

// copyingBackend offers the trivial copy layout for every matrix.
type copyingBackend struct{ fakeBackend }

func (b copyingBackend) Layouts() []backends.Layout {
	return []backends.Layout{backends.CopyLayout{For: b.Name()}}
}

// TestWeightLayoutMechanism repacks every matrix with the trivial copy
// layout and reads each back from the side data.
func TestWeightLayoutMechanism(t *testing.T) {
	g, f := stories(t)
	var side []byte
	c := Config{Backends: []backends.Backend{copyingBackend{allCPU()}}, Weights: f, Packed: &side}
	runPasses(t, g, c, "placement", "weight-layout")
	n := 0
	for _, w := range g.Nodes {
		if w.Layout == nil {
			continue
		}
		n++
		got, err := backends.PackedBytes(w, side)
		if err != nil {
			t.Fatal(err)
		}
		ti, _ := f.Tensor(w.Tensor)
		if !bytes.Equal(got, f.TensorData(ti)) || w.Layout.Offset%packAlign != 0 {
			t.Fatalf("%s: repacked bytes differ from the model's", w.Name)
		}
	}
	if n < 5*7 {
		t.Fatalf("%d weights repacked, want every matrix", n)
	}
	bad := graph.Node{Name: "w", Layout: &graph.Layout{Name: "copy", Offset: int64(len(side)) - 4, Size: 8}}
	if _, err := backends.PackedBytes(&bad, side); err == nil {
		t.Fatal("a layout range past the side data was accepted")
	}
}

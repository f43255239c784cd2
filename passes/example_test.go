package passes_test

import (
	"fmt"

	"github.com/weft-ml/weft/graph"
	"github.com/weft-ml/weft/passes"
)

// A program's own pass goes before a named built-in; the pipeline then
// verifies, logs and dumps it like the others (runtime.CompileOptions.Insert
// and compute.Options.Insert take the same Insertions).
func ExampleInsert() {
	mine := passes.New("count-nodes", func(g *graph.Graph) (passes.Change, error) {
		return passes.Change{Details: []string{fmt.Sprintf("%d nodes", len(g.Nodes))}}, nil
	})
	list, err := passes.Select(passes.Config{}, []string{"simplify", "fuse-norm", "placement"}, nil, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	list, err = passes.Insert(list, passes.Insertion{Pass: mine, Before: "fuse-norm"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range list {
		fmt.Println(p.Name())
	}
	// Output:
	// simplify
	// count-nodes
	// fuse-norm
	// placement
}

package passes

import (
	"errors"
	"fmt"
	"slices"
)

// Insertion puts a program's own pass into the pipeline, right before or
// right after the pass named by Before or After (one of them; both empty:
// at the end). The pipeline treats it as a built-in: the graph is
// verified after it, its changes go to the plan's pass log and it can be
// dumped by name (Pipeline.DumpAfter).
//
// A pass that runs after placement must place the nodes it makes
// (graph.Node.Backend) and keep graph.Splits in order; one after
// memory-plan must not add computed nodes (they would have no buffer).
// Passes that only rewrite ops before the fusions need neither.
type Insertion struct {
	Pass          Pass
	Before, After string
}

// Insert returns list with every insertion placed, in order; an insertion
// may name a pass inserted before it. It fails on a pass without a name,
// a name already in the list or of a built-in pass, both anchors given,
// or an anchor missing from the list (left out with --passes or
// --disable, say).
func Insert(list []Pass, ins ...Insertion) ([]Pass, error) {
	out := slices.Clone(list)
	for _, in := range ins {
		if in.Pass == nil {
			return nil, errors.New("inserting a nil pass")
		}
		name := in.Pass.Name()
		names := passNames(out)
		switch {
		case name == "" || name == "all" || name == "lowered":
			return nil, fmt.Errorf("inserted pass named %q: give it a name of its own", name)
		case slices.Contains(Names(), name) || slices.Contains(names, name):
			return nil, fmt.Errorf("inserted pass %q: a pass of that name is already in the pipeline or built in", name)
		case in.Before != "" && in.After != "":
			return nil, fmt.Errorf("inserted pass %q: give Before or After, not both", name)
		}
		at := len(out)
		if anchor := in.Before + in.After; anchor != "" {
			i := slices.Index(names, anchor)
			if i < 0 {
				return nil, fmt.Errorf("inserted pass %q: pass %q is not in the pipeline (%v)", name, anchor, names)
			}
			at = i
			if in.After != "" {
				at++
			}
		}
		out = slices.Insert(out, at, in.Pass)
	}
	return out, nil
}

func passNames(list []Pass) []string {
	names := make([]string, len(list))
	for i, p := range list {
		names[i] = p.Name()
	}
	return names
}

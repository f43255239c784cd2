// Package tapdump writes, reads and compares dumps of tapped values
// (runtime.Options.Taps): graphrun --dump-tensors writes one, graphc
// tensordiff compares two node by node and names the first node where they
// differ, the tool for finding where two backends or two builds part.
//
// A dump is a folder:
//
//	index.json            {"format": "weft-tensors", "version": 1, "source": …, "backend": …,
//	                       "tensors": [{"step", "pos", "node", "name", "op", "layer",
//	                                    "backend", "rows", "width", "file"}, …]}
//	SSSS-NNNN.f32         one per tapped node and batch: rows×width float32,
//	                      little-endian, row-major (step SSSS, node NNNN)
//
// Entries are in the order the values were computed. Two dumps are matched
// by batch (step), node name and occurrence, not by node ID: two plans of
// one model (CPU and Vulkan placements, two builds) number their nodes
// differently.
package tapdump

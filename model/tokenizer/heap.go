package tokenizer

import "math"

// mergeHeap is a binary min-heap of merge candidates ordered by key alone.
// Both merge loops pack their order into the key (best score or rank in
// the high half, the left symbol index in the low half), so comparisons
// are plain integer compares.
type mergeHeap struct{ items []candidate }

// candidate is a queued merge of symbols left (in key) and right.
type candidate struct {
	key   uint64
	right int32
	size  int32 // combined byte length when queued, to detect stale pairs
	id    int32 // BPE: the merged token
}

func (c candidate) left() int32 { return int32(uint32(c.key)) }

func (h *mergeHeap) reset() { h.items = h.items[:0] }

func (h *mergeHeap) len() int { return len(h.items) }

func (h *mergeHeap) push(x candidate) {
	h.items = append(h.items, x)
	items := h.items
	i := len(items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if items[p].key <= x.key {
			break
		}
		items[i] = items[p]
		i = p
	}
	items[i] = x
}

func (h *mergeHeap) pop() candidate {
	items := h.items
	top := items[0]
	last := len(items) - 1
	x := items[last]
	items = items[:last]
	i := 0
	for {
		c := 2*i + 1
		if c >= last {
			break
		}
		if r := c + 1; r < last && items[r].key < items[c].key {
			c = r
		}
		if x.key <= items[c].key {
			break
		}
		items[i] = items[c]
		i = c
	}
	if last > 0 {
		items[i] = x
	}
	h.items = items
	return top
}

// spmKey orders SPM candidates: higher score first, then leftmost.
func spmKey(score float32, left int32) uint64 {
	return uint64(^orderedFloat(score))<<32 | uint64(uint32(left))
}

// bpeKey orders BPE candidates: lower rank first, then leftmost.
func bpeKey(rank, left int32) uint64 {
	return uint64(uint32(rank))<<32 | uint64(uint32(left))
}

// orderedFloat maps a float32 to a uint32 with the same ordering
// (NaN aside), so scores compare as integers.
func orderedFloat(f float32) uint32 {
	b := math.Float32bits(f)
	if b&(1<<31) != 0 {
		return ^b
	}
	return b | 1<<31
}

package synth

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/quant"
)

// RowSource fills dst (one row of cols elements) with row r of a tensor.
// It is called concurrently for different rows.
type RowSource func(r int, dst []float32) error

// chunkElems is about how many elements one worker converts at a time:
// large enough to amortise scheduling, small enough to keep memory flat.
const chunkElems = 1 << 16

// EncodeRows converts a rows×cols tensor produced by fill to type t and
// writes it to w in row order. Chunks of rows are converted on workers
// goroutines; memory use is a few chunks, whatever the tensor's size.
func EncodeRows(w io.Writer, t gguf.TensorType, rows, cols int, fill RowSource, workers int) error {
	if !quant.Supported(t) {
		return quant.UnsupportedError("", t)
	}
	rowBytes, err := t.RowBytes(uint64(cols))
	if err != nil {
		return err
	}
	e := &rowEncoder{t: t, rows: rows, cols: cols, rowBytes: int(rowBytes), fill: fill}
	e.chunkRows = max(1, chunkElems/max(cols, 1))
	workers = max(1, workers)
	batch := 4 * workers
	outs := make([][]byte, batch)
	for i := range outs {
		outs[i] = make([]byte, e.chunkRows*e.rowBytes)
	}
	nChunks := (rows + e.chunkRows - 1) / e.chunkRows
	for first := 0; first < nChunks; first += batch {
		n := min(batch, nChunks-first)
		if err := e.runBatch(first, outs[:n], workers); err != nil {
			return err
		}
		for j := 0; j < n; j++ {
			if _, err := w.Write(outs[j][:e.chunkBytes(first+j)]); err != nil {
				return err
			}
		}
	}
	return nil
}

type rowEncoder struct {
	t          gguf.TensorType
	rows, cols int
	rowBytes   int
	chunkRows  int
	fill       RowSource
}

func (e *rowEncoder) chunkRange(c int) (lo, hi int) {
	lo = c * e.chunkRows
	return lo, min(lo+e.chunkRows, e.rows)
}

func (e *rowEncoder) chunkBytes(c int) int {
	lo, hi := e.chunkRange(c)
	return (hi - lo) * e.rowBytes
}

// runBatch converts chunks first … first+len(outs)-1 into outs.
func (e *rowEncoder) runBatch(first int, outs [][]byte, workers int) error {
	errs := make([]error, len(outs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < min(workers, len(outs)); g++ {
		wg.Go(func() {
			src := make([]float32, e.chunkRows*e.cols)
			for {
				j := int(next.Add(1) - 1)
				if j >= len(outs) {
					return
				}
				errs[j] = e.chunk(first+j, src, outs[j])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (e *rowEncoder) chunk(c int, src []float32, out []byte) error {
	lo, hi := e.chunkRange(c)
	for r := lo; r < hi; r++ {
		if err := e.fill(r, src[(r-lo)*e.cols:(r-lo+1)*e.cols]); err != nil {
			return err
		}
	}
	n := hi - lo
	if err := quant.Quantize(e.t, src[:n*e.cols], out[:n*e.rowBytes]); err != nil {
		return fmt.Errorf("rows %d to %d: %w", lo, hi, err)
	}
	return nil
}

package main

import (
	"os"

	"github.com/dave/jennifer/jen"
)

const ggufPath = "github.com/weft-ml/weft/gguf"

// dotEntry and quantEntry describe one generated kernel for the table.
type dotEntry struct {
	typ, one, rows string
	chunk          int
}

// gemmEntry lists one format's GEMM tiles, tiles[k] taking k+1 tokens.
type gemmEntry struct {
	typ   string
	chunk int
	tiles []string
}

type quantEntry struct {
	typ, fn string
	chunk   int
}

// registry collects, per variant in generation order, what was emitted.
type registry struct {
	order  []string
	dots   map[string][]dotEntry
	quants map[string][]quantEntry
	gemms  map[string][]gemmEntry
	packs  map[string][]gemmEntry // packed-layout tiles; chunk unused
	elems  map[string]elemEntry
}

// elemEntry names a variant's element-wise kernels.
type elemEntry struct {
	silu, softmaxExp, mul, add string
	scaleMax, scale            string
	lanes                      int // floats per chunk of mul, add, scaleMax, scale and gelu
	gelu                       string
	flashF16, flashF32         string                    // flash attention's accumulator updates
	flashExp                   string                    // flash attention's exact exponential
	flashTiles                 [len(flashKinds)][]string // tiled updates of each of flashKinds: [h] takes h+1 heads
	flashScores                []string                  // F16 scores over transposed K: [h] takes h+1 heads
	flashScoresF32             []string                  // the same over a widened (float32) K
	flashScan                  string                    // the running maximum's scan ("": Go)
	flashTails                 [len(flashKinds)][]string // unfused tail vectors of flashKinds (none for the quantized): [h] takes h+1 heads
	widenF16                   string                    // the wide F16 GEMM's activations to float32
	f16Wide, f16WideIn         []string                  // wide F16 GEMM tiles: [p] takes p+1 token pairs
	f32Vec, f32Tiny            string                    // float32 dot products in llama.cpp's two orders
	bf16DP                     []string                  // BF16 GEMM tiles by VDPBF16PS: [k] takes k+1 tokens
	decodeF16, decodeBF16      string                    // decode kernels (decode_float.go)
	ropePairs, ropeNeoX        string                    // RoPE's rotations (rope.go)
}

func (r *registry) see(v variant) {
	if r.dots == nil {
		r.dots, r.quants = map[string][]dotEntry{}, map[string][]quantEntry{}
		r.gemms, r.packs = map[string][]gemmEntry{}, map[string][]gemmEntry{}
		r.elems = map[string]elemEntry{}
	}
	for _, n := range r.order {
		if n == v.name {
			return
		}
	}
	r.order = append(r.order, v.name)
}

func (r *registry) dot(v variant, typ, one, rows string, chunk int) {
	r.see(v)
	r.dots[v.name] = append(r.dots[v.name], dotEntry{typ, one, rows, chunk})
}

func (r *registry) quant(v variant, typ, fn string, chunk int) {
	r.see(v)
	r.quants[v.name] = append(r.quants[v.name], quantEntry{typ, fn, chunk})
}

func (r *registry) gemm(v variant, typ string, chunk int, tiles []string) {
	r.see(v)
	r.gemms[v.name] = append(r.gemms[v.name], gemmEntry{typ, chunk, tiles})
}

func (r *registry) packed(v variant, typ string, tiles []string) {
	r.see(v)
	r.packs[v.name] = append(r.packs[v.name], gemmEntry{typ: typ, tiles: tiles})
}

func (r *registry) elem(v variant, silu, softmaxExp string) {
	r.see(v)
	e := r.elems[v.name]
	e.silu, e.softmaxExp = silu, softmaxExp
	r.elems[v.name] = e
}

func (r *registry) gelu(v variant, gelu string) {
	r.see(v)
	e := r.elems[v.name]
	e.gelu = gelu
	r.elems[v.name] = e
}

func (r *registry) softmaxSteps(v variant, scaleMax, scale string) {
	r.see(v)
	e := r.elems[v.name]
	e.scaleMax, e.scale = scaleMax, scale
	r.elems[v.name] = e
}

func (r *registry) flash(v variant, f16, f32 string) {
	r.see(v)
	e := r.elems[v.name]
	e.flashF16, e.flashF32 = f16, f32
	r.elems[v.name] = e
}

func (r *registry) flashTiles(v variant, exp string, tiles [len(flashKinds)][]string) {
	r.see(v)
	e := r.elems[v.name]
	e.flashExp, e.flashTiles = exp, tiles
	r.elems[v.name] = e
}

// update applies set to variant v's element-wise entry.
func (r *registry) update(v variant, set func(e *elemEntry)) {
	r.see(v)
	e := r.elems[v.name]
	set(&e)
	r.elems[v.name] = e
}

func (r *registry) flashScores(v variant, f16, f32 []string) {
	r.update(v, func(e *elemEntry) { e.flashScores, e.flashScoresF32 = f16, f32 })
}

func (r *registry) flashTails(v variant, tails [len(flashKinds)][]string) {
	r.update(v, func(e *elemEntry) { e.flashTails = tails })
}

func (r *registry) flashScan(v variant, scan string) {
	r.update(v, func(e *elemEntry) { e.flashScan = scan })
}

func (r *registry) f16Wide(v variant, widen string, tiles, in []string) {
	r.see(v)
	e := r.elems[v.name]
	e.widenF16, e.f16Wide, e.f16WideIn = widen, tiles, in
	r.elems[v.name] = e
}

func (r *registry) f32Dots(v variant, vec, tiny string) {
	r.see(v)
	e := r.elems[v.name]
	e.f32Vec, e.f32Tiny = vec, tiny
	r.elems[v.name] = e
}

func (r *registry) bf16DP(v variant, tiles []string) {
	r.see(v)
	e := r.elems[v.name]
	e.bf16DP = tiles
	r.elems[v.name] = e
}

func (r *registry) decodeFloat(v variant, f16, bf16 string) {
	r.see(v)
	e := r.elems[v.name]
	e.decodeF16, e.decodeBF16 = f16, bf16
	r.elems[v.name] = e
}

func (r *registry) binary(v variant, mul, add string, lanes int) {
	r.see(v)
	e := r.elems[v.name]
	e.mul, e.add, e.lanes = mul, add, lanes
	r.elems[v.name] = e
}

// ids renders function names as identifiers.
func ids(names []string) []jen.Code {
	out := make([]jen.Code, len(names))
	for i, n := range names {
		out[i] = jen.Id(n)
	}
	return out
}

// packedValues renders a variant's packed-layout entries.
func packedValues(es []gemmEntry) []jen.Code {
	var out []jen.Code
	for _, g := range es {
		out = append(out, jen.Values(jen.Dict{
			jen.Id("w"):     jen.Qual(ggufPath, g.typ),
			jen.Id("tiles"): jen.Index().Id("packedTile").Values(ids(g.tiles)...),
		}))
	}
	return out
}

// gemmValues renders a variant's GEMM entries.
func gemmValues(es []gemmEntry) []jen.Code {
	var out []jen.Code
	for _, g := range es {
		out = append(out, jen.Values(jen.Dict{
			jen.Id("w"):     jen.Qual(ggufPath, g.typ),
			jen.Id("chunk"): jen.Lit(g.chunk),
			jen.Id("tiles"): jen.Index().Id("gemmTile").Values(ids(g.tiles)...),
		}))
	}
	return out
}

// writeTable emits the Go table of generated kernels, one kernelSet per
// variant, best variant last.
func writeTable(path string, r *registry) error {
	f := jen.NewFile("simd")
	f.HeaderComment("Code generated by simdgen (codegen/cmd/simdgen). DO NOT EDIT.")
	f.HeaderComment("")
	f.HeaderComment("//go:build !purego")
	f.Comment("rowsPerCall is how many weight rows one multi-row kernel call takes.")
	f.Const().Id("rowsPerCall").Op("=").Lit(rowsPerCall)
	f.Comment("gemmRows is how many weight rows one GEMM tile takes.")
	f.Const().Id("gemmRows").Op("=").Lit(gemmRows)
	f.Comment("f16WideK is the wide F16 GEMM's k-block and f16WideWRow its widened weight rows' stride, in values.")
	f.Const().Defs(jen.Id("f16WideK").Op("=").Lit(f16WideK), jen.Id("f16WideWRow").Op("=").Lit(f16WideWRow))
	var sets []jen.Code
	for _, name := range r.order {
		var dots, quants []jen.Code
		for _, d := range r.dots[name] {
			fields := jen.Dict{
				jen.Id("w"):     jen.Qual(ggufPath, d.typ),
				jen.Id("chunk"): jen.Lit(d.chunk),
				jen.Id("one"):   jen.Id(d.one),
			}
			if d.rows != "" {
				fields[jen.Id("rows")] = jen.Id(d.rows)
			}
			dots = append(dots, jen.Values(fields))
		}
		for _, q := range r.quants[name] {
			quants = append(quants, jen.Values(jen.Dict{
				jen.Id("t"):     jen.Qual(ggufPath, q.typ),
				jen.Id("chunk"): jen.Lit(q.chunk),
				jen.Id("fn"):    jen.Id(q.fn),
			}))
		}
		set := jen.Dict{
			jen.Id("name"):   jen.Lit(name),
			jen.Id("dots"):   jen.Index().Id("dotKernel").Values(dots...),
			jen.Id("quants"): jen.Index().Id("quantKernel").Values(quants...),
			jen.Id("gemms"):  jen.Index().Id("gemmKernel").Values(gemmValues(r.gemms[name])...),
			jen.Id("packs"):  jen.Index().Id("packedKernel").Values(packedValues(r.packs[name])...),
		}
		if e := r.elems[name]; e.silu != "" {
			set[jen.Id("silu")] = jen.Id(e.silu)
			set[jen.Id("softmaxExp")] = jen.Id(e.softmaxExp)
		}
		if e := r.elems[name]; e.mul != "" {
			set[jen.Id("mul")] = jen.Id(e.mul)
			set[jen.Id("add")] = jen.Id(e.add)
			set[jen.Id("lanes")] = jen.Lit(e.lanes)
			set[jen.Id("scaleMax")] = jen.Id(e.scaleMax)
			set[jen.Id("scale")] = jen.Id(e.scale)
		}
		if e := r.elems[name]; e.gelu != "" {
			set[jen.Id("gelu")] = jen.Id(e.gelu)
		}
		if e := r.elems[name]; e.flashF16 != "" {
			set[jen.Id("flashF16")] = jen.Id(e.flashF16)
			set[jen.Id("flashF32")] = jen.Id(e.flashF32)
		}
		if e := r.elems[name]; e.flashExp != "" {
			set[jen.Id("flashExp")] = jen.Id(e.flashExp)
			set[jen.Id("flashTiles")] = flashTileTable(e.flashTiles[:])
		}
		if e := r.elems[name]; len(e.flashScores) > 0 {
			set[jen.Id("flashScores")] = jen.Index().Id("flashScoreTile").Values(ids(e.flashScores)...)
			set[jen.Id("flashScoresF32")] = jen.Index().Id("flashScoreTile").Values(ids(e.flashScoresF32)...)
		}
		if e := r.elems[name]; len(e.flashTails[0]) > 0 {
			set[jen.Id("flashTails")] = flashTileTable(e.flashTails[:])
		}
		if e := r.elems[name]; e.flashScan != "" {
			set[jen.Id("flashScan")] = jen.Id(e.flashScan)
		}
		if e := r.elems[name]; e.widenF16 != "" {
			set[jen.Id("widenF16")] = jen.Id(e.widenF16)
			set[jen.Id("f16Wide")] = jen.Index().Id("f16WideTile").Values(ids(e.f16Wide)...)
			set[jen.Id("f16WideIn")] = jen.Index().Id("f16WideTile").Values(ids(e.f16WideIn)...)
		}
		if e := r.elems[name]; e.f32Vec != "" {
			set[jen.Id("f32Vec")] = jen.Id(e.f32Vec)
			set[jen.Id("f32Tiny")] = jen.Id(e.f32Tiny)
		}
		if e := r.elems[name]; len(e.bf16DP) > 0 {
			set[jen.Id("bf16DP")] = jen.Index().Id("gemmTile").Values(ids(e.bf16DP)...)
		}
		if e := r.elems[name]; e.decodeF16 != "" {
			set[jen.Id("decodeF16")] = jen.Id(e.decodeF16)
			set[jen.Id("decodeBF16")] = jen.Id(e.decodeBF16)
		}
		if e := r.elems[name]; e.ropePairs != "" {
			set[jen.Id("ropePairs")] = jen.Id(e.ropePairs)
			set[jen.Id("ropeNeoX")] = jen.Id(e.ropeNeoX)
		}
		sets = append(sets, jen.Values(set))
	}
	f.Comment("asmKernels lists the generated kernels of each instruction-set variant.")
	f.Var().Id("asmKernels").Op("=").Index().Id("kernelSet").Values(sets...)
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f.Render(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// flashTileTable is the literal [len(kinds)][]flashTile{…} of the tile
// kernels of each kind.
func flashTileTable(kinds [][]string) jen.Code {
	var lists []jen.Code
	for _, ts := range kinds {
		lists = append(lists, jen.Values(ids(ts)...))
	}
	return jen.Index(jen.Lit(len(kinds))).Index().Id("flashTile").Values(lists...)
}

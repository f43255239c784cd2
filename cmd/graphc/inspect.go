package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/model"
	"github.com/weft-ml/weft/model/synth"
)

func init() {
	register(&command{
		name:    "inspect",
		usage:   "MODEL.gguf [--json]",
		summary: "show a GGUF model's architecture (and whether weft runs it), hyperparameters, tokenizer and tensors",
		run:     runInspect,
	})
}

func runInspect(args []string) error {
	return inspect(args, os.Stdout)
}

func inspect(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object: architecture, metadata, tensors")
	pos, err := flagsAnyOrder(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("usage: graphc inspect MODEL.gguf [--json]")
	}
	f, err := gguf.Open(pos[0])
	if err != nil {
		return err
	}
	defer f.Close()
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(inspectJSON(f))
	}
	return inspectText(out, pos[0], f)
}

// flagsAnyOrder parses flags placed before, between or after positional
// arguments and returns the positional ones.
func flagsAnyOrder(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// longArray is the length above which arrays are summarised.
const longArray = 16

type tensorJSON struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Shape  []uint64 `json:"shape"`
	Offset uint64   `json:"offset"`
	Bytes  uint64   `json:"bytes"`
}

type inspectDoc struct {
	Architecture string         `json:"architecture"`
	Weft         weftSupport    `json:"weft"`
	Metadata     map[string]any `json:"metadata"`
	Tensors      []tensorJSON   `json:"tensors"`
}

// weftSupport says whether weft runs a file: its architecture among the
// supported ones (listed), and the lowering's error, which names the
// missing or misshapen tensor or key, if any.
type weftSupport struct {
	Architectures []string `json:"architectures"`
	Supported     bool     `json:"supported"`
	Error         string   `json:"error,omitempty"`
}

// supportOf lowers f (metadata and tensor table only: no weight is read).
func supportOf(f *gguf.File) weftSupport {
	s := weftSupport{Architectures: model.Architectures(), Supported: model.Supported(f.Architecture())}
	if _, err := model.Lower(f); err != nil {
		s.Error = err.Error()
	}
	return s
}

// text is the support line of inspect's text output.
func (s weftSupport) text(arch string) string {
	list := strings.Join(s.Architectures, ", ")
	switch {
	case !s.Supported:
		return fmt.Sprintf("not supported: weft runs %s (%s)", list, s.Error)
	case s.Error != "":
		return fmt.Sprintf("%s is supported, but this file cannot be lowered: %s", arch, s.Error)
	}
	return fmt.Sprintf("supported (weft runs %s)", list)
}

// inspectJSON describes f; tensor offsets are relative to the data section,
// as GGUF stores them.
func inspectJSON(f *gguf.File) inspectDoc {
	doc := inspectDoc{Architecture: f.Architecture(), Weft: supportOf(f), Metadata: map[string]any{}, Tensors: []tensorJSON{}}
	for _, kv := range f.KV {
		doc.Metadata[kv.Key] = jsonValue(kv.Value)
	}
	for _, t := range f.Tensors {
		doc.Tensors = append(doc.Tensors, tensorJSON{t.Name, t.Type.String(), t.Dims, t.Offset, t.Size})
	}
	return doc
}

func jsonValue(v gguf.Value) any {
	switch x := v.V.(type) {
	case float32:
		return jsonFloat(float64(x), 32)
	case float64:
		return jsonFloat(x, 64)
	case gguf.Array:
		return jsonArray(x)
	}
	return v.V
}

// jsonFloat keeps float32 values short (1e-05, not 9.999999747378752e-06)
// and spells non-finite values as strings, which JSON numbers cannot hold.
func jsonFloat(x float64, bits int) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return strconv.FormatFloat(x, 'g', -1, bits)
	}
	return json.Number(strconv.FormatFloat(x, 'g', -1, bits))
}

func jsonArray(a gguf.Array) any {
	n := a.Len()
	if n > longArray {
		return map[string]any{"type": "array", "elem": a.Elem.String(), "len": n}
	}
	out := make([]any, n)
	for i := range out {
		out[i] = jsonValue(arrayElem(a, i))
	}
	return out
}

// arrayElem returns element i of a as a Value.
func arrayElem(a gguf.Array, i int) gguf.Value {
	switch d := a.Data.(type) {
	case []gguf.Array:
		return gguf.Value{Type: gguf.ValueArray, V: d[i]}
	case []string:
		return gguf.ValueOf(d[i])
	case []uint8:
		return gguf.ValueOf(d[i])
	case []int8:
		return gguf.ValueOf(d[i])
	case []uint16:
		return gguf.ValueOf(d[i])
	case []int16:
		return gguf.ValueOf(d[i])
	case []uint32:
		return gguf.ValueOf(d[i])
	case []int32:
		return gguf.ValueOf(d[i])
	case []float32:
		return gguf.ValueOf(d[i])
	case []bool:
		return gguf.ValueOf(d[i])
	case []uint64:
		return gguf.ValueOf(d[i])
	case []int64:
		return gguf.ValueOf(d[i])
	case []float64:
		return gguf.ValueOf(d[i])
	}
	return gguf.Value{}
}

func inspectText(w io.Writer, path string, f *gguf.File) error {
	arch := f.Architecture()
	fmt.Fprintf(w, "%s: GGUF v%d, %d bytes, alignment %d, data at byte %d\n", path, f.Version, f.Size(), f.Alignment, f.DataOffset)
	fmt.Fprintf(w, "architecture: %s\n", arch)
	fmt.Fprintf(w, "weft:         %s\n", supportOf(f).text(arch))
	if name := f.String("general.name", ""); name != "" {
		fmt.Fprintf(w, "name:         %s\n", name)
	}
	if ft, ok := f.Lookup("general.file_type"); ok {
		id, _ := ft.Uint64()
		fmt.Fprintf(w, "file type:    %s %s\n", textValue(ft), synth.FileTypeName(uint32(id)))
	}
	printKeys(w, "hyperparameters", f, func(k string) bool { return strings.HasPrefix(k, arch+".") })
	printTokenizer(w, f)
	printKeys(w, "other metadata", f, func(k string) bool {
		return !strings.HasPrefix(k, arch+".") && !strings.HasPrefix(k, "tokenizer.") &&
			k != "general.architecture" && k != "general.name" && k != "general.file_type"
	})
	printTensors(w, f)
	return nil
}

func printKeys(w io.Writer, title string, f *gguf.File, keep func(string) bool) {
	var lines []string
	for _, kv := range f.KV {
		if keep(kv.Key) {
			lines = append(lines, fmt.Sprintf("  %-44s %s", kv.Key, textValue(kv.Value)))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "%s:\n%s\n", title, strings.Join(lines, "\n"))
	}
}

// textValue renders a value on one line, summarising long arrays.
func textValue(v gguf.Value) string {
	a, ok := v.V.(gguf.Array)
	if !ok {
		if s, isStr := v.V.(string); isStr {
			return strconv.Quote(s)
		}
		return fmt.Sprint(v.V)
	}
	if a.Len() > longArray {
		return fmt.Sprintf("[%s × %d]", a.Elem, a.Len())
	}
	parts := make([]string, a.Len())
	for i := range parts {
		parts[i] = textValue(arrayElem(a, i))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func printTokenizer(w io.Writer, f *gguf.File) {
	tokens := f.Strings("tokenizer.ggml.tokens")
	model := f.String("tokenizer.ggml.model", "")
	if model == "" && tokens == nil {
		fmt.Fprintln(w, "tokenizer: none")
		return
	}
	fmt.Fprintf(w, "tokenizer: model %s, pre %s, %d tokens", orDash(model), orDash(f.String("tokenizer.ggml.pre", "")), len(tokens))
	for _, special := range []string{"bos", "eos"} {
		id, ok := f.Lookup("tokenizer.ggml." + special + "_token_id")
		if !ok {
			continue
		}
		fmt.Fprintf(w, ", %s %s", special, textValue(id))
		if i, ok := id.Uint64(); ok && i < uint64(len(tokens)) {
			fmt.Fprintf(w, " %q", tokens[i])
		}
	}
	if merges := f.Strings("tokenizer.ggml.merges"); merges != nil {
		fmt.Fprintf(w, ", %d merges", len(merges))
	}
	fmt.Fprintln(w)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printTensors(w io.Writer, f *gguf.File) {
	fmt.Fprintf(w, "tensors:\n  %-36s %-7s %-22s %12s\n", "name", "type", "shape", "bytes")
	var bytes, params uint64
	hist := map[string]int{}
	for _, t := range f.Tensors {
		fmt.Fprintf(w, "  %-36s %-7s %-22s %12d\n", t.Name, t.Type, dimsString(t.Dims), t.Size)
		bytes += t.Size
		params += t.NumElements()
		hist[t.Type.String()]++
	}
	types := make([]string, 0, len(hist))
	for name := range hist {
		types = append(types, name)
	}
	sort.Strings(types)
	for i, name := range types {
		types[i] = fmt.Sprintf("%s %d", name, hist[name])
	}
	fmt.Fprintf(w, "totals: %d tensors, %d bytes (%.2f MiB), %d parameters; types: %s\n",
		len(f.Tensors), bytes, float64(bytes)/(1<<20), params, strings.Join(types, ", "))
}

func dimsString(dims []uint64) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = strconv.FormatUint(d, 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

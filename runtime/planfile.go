package runtime

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"

	"github.com/weft-ml/weft/gguf"
	"github.com/weft-ml/weft/internal/safefile"
)

// maxPlanBytes bounds a plan file: a plan is a few hundred nodes of JSON
// (well under a MiB for a 70B model), so anything far larger is not one.
const maxPlanBytes = 256 << 20

// recompile ends every message about a plan that cannot be used.
const recompile = "recompile it with graphc compile"

// WritePlan writes p to path: a repacked side file first (under a name of
// its own, content-tagged), then the plan, renamed into place as the one
// step that switches a reader from the old pair to the new one. The GGUF
// the plan was compiled from is never overwritten.
func WritePlan(path string, p *Plan) error {
	t, err := safefile.CheckOutput(path, p.Model.AbsPath)
	if err != nil {
		return err
	}
	var side *pendingSide
	if len(p.Packed) > 0 {
		if t.InPlace {
			return errNoSideFile(path)
		}
		f, err := safefile.TempBeside(t.Path + ".packed")
		if err != nil {
			return err
		}
		side = &pendingSide{tmp: f.Name()}
		_, err = f.Write(p.Packed)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			safefile.Discard(f.Name())
			return fmt.Errorf("writing the repacked weights beside %s: %w", path, err)
		}
		side.sum, side.crc = packedSum(p.Packed), packedCRC(p.Packed)
	}
	return commitPlan(t.Path, p, side)
}

func errNoSideFile(out string) error {
	return fmt.Errorf("%s is a device or a pipe, but this plan has repacked weights, which go into a file beside the plan: give a file path", out)
}

// beforePlanCommit, when set by a test, runs after the side file is in
// place and before the plan is renamed over the old one.
var beforePlanCommit func() error

// pendingSide is a repacked side file written to a temporary name.
type pendingSide struct {
	tmp      string
	sum, crc string
}

// sideFileName is the side file's name beside the plan: the plan's name,
// the content tag and .packed. A recompile with other results writes
// another name, so a plan never meets a side file that is not its own.
func sideFileName(plan, crc string) string {
	tag := crc
	if len(tag) > 8 {
		tag = tag[len(tag)-8:]
	}
	return filepath.Base(plan) + "." + tag + ".packed"
}

// commitPlan puts the side file (if any) and then the plan in place and
// removes the side file of the plan it replaced. On failure the old plan
// and its side file are untouched and nothing new is left behind.
func commitPlan(path string, p *Plan, side *pendingSide) (err error) {
	dir := filepath.Dir(path)
	old := oldSideFile(path)
	p.PackedFile, p.PackedSum, p.PackedCRC = "", "", ""
	var placed string // the new side file, once renamed
	defer func() {
		if err != nil && side != nil {
			safefile.Discard(side.tmp)
			if placed != "" && placed != old {
				os.Remove(placed)
			}
		}
	}()
	if side != nil {
		name := sideFileName(path, side.crc)
		placed = filepath.Join(dir, name)
		if err := os.Chmod(side.tmp, 0o644); err != nil {
			return err
		}
		if err := os.Rename(side.tmp, placed); err != nil {
			return fmt.Errorf("placing the repacked weights %s: %w", placed, err)
		}
		safefile.Forget(side.tmp)
		if placed != old {
			safefile.Track(placed) // until the plan that names it is in place
			defer safefile.Forget(placed)
		}
		p.PackedFile, p.PackedSum, p.PackedCRC = name, side.sum, side.crc
	}
	if abs, aerr := filepath.Abs(dir); aerr == nil && p.Model.AbsPath != "" {
		if rel, rerr := filepath.Rel(abs, p.Model.AbsPath); rerr == nil {
			p.Model.RelPath = rel
		}
	}
	data, err := json.MarshalIndent(p, "", " ")
	if err != nil {
		return err
	}
	if beforePlanCommit != nil {
		if err := beforePlanCommit(); err != nil {
			return err
		}
	}
	if err := safefile.WriteFile(path, append(data, '\n'), p.Model.AbsPath); err != nil {
		return err
	}
	if old != "" && old != placed {
		os.Remove(old)
	}
	return nil
}

// oldSideFile is the side file of the plan now at path, if it is one.
func oldSideFile(path string) string {
	data, err := safefile.ReadLimited(path, "plan", maxPlanBytes)
	if err != nil {
		return ""
	}
	var head struct {
		Format     string `json:"format"`
		PackedFile string `json:"packed_file"`
	}
	if json.Unmarshal(data, &head) != nil || head.Format != PlanFormat || head.PackedFile == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(path), filepath.Base(head.PackedFile))
}

// CompileTo compiles the model at in and writes the plan to out, with the
// repacked weights written straight into a mapped temporary side file
// rather than built in memory and copied: for a 1.1B model that is 600 MB
// less to allocate, touch and copy. The disk space is reserved before the
// mapping is written, so a full disk is an error. The returned plan's
// Packed maps the side file.
func CompileTo(in, out string, o CompileOptions) (*Plan, error) {
	t, err := safefile.CheckOutput(out, in)
	if err != nil {
		return nil, err
	}
	var tmp *os.File
	var release func() error // the mapping, should Compile fail after making it
	o.packedMem = func(size int) ([]byte, func() error, error) {
		if t.InPlace {
			return nil, nil, errNoSideFile(out)
		}
		if tmp, err = safefile.TempBeside(t.Path + ".packed"); err != nil {
			return nil, nil, err
		}
		b, free, err := mapReservedFile(tmp, size)
		release = free
		return b, free, err
	}
	discard := func() {
		if tmp != nil {
			tmp.Close()
			safefile.Discard(tmp.Name())
		}
	}
	p, err := Compile(in, o)
	if err != nil {
		if release != nil {
			release()
		}
		discard()
		return nil, err
	}
	if len(p.Packed) == 0 {
		p.closePacked()
		discard()
		return p, commitPlan(t.Path, p, nil)
	}
	side, err := finishSide(p, tmp)
	if err != nil {
		discard()
		return nil, err
	}
	// Map the side file before the plan is committed: once it is, a
	// concurrent compile to the same path may replace this plan and remove
	// its side file, and the mapping (of the inode) must already exist.
	if p.Packed, p.unmapPacked, err = mapReadOnly(side.tmp); err != nil {
		safefile.Discard(side.tmp)
		return nil, err
	}
	if err := commitPlan(t.Path, p, side); err != nil {
		p.closePacked()
		return nil, err
	}
	p.path, p.sidePath = t.Path, filepath.Join(filepath.Dir(t.Path), p.PackedFile)
	return p, nil
}

// finishSide checksums the repacked weights in the mapped temporary file,
// unmaps it, cuts it to the bytes used and syncs it.
func finishSide(p *Plan, tmp *os.File) (*pendingSide, error) {
	used := len(p.Packed)
	side := &pendingSide{tmp: tmp.Name(), sum: packedSum(p.Packed), crc: packedCRC(p.Packed)}
	err := p.closePacked()
	if err == nil {
		err = tmp.Truncate(int64(used))
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("writing the repacked weights: %w", err)
	}
	return side, nil
}

// ReadPlan reads and checks a plan file. Every refusal says what is wrong
// with the file and what to do.
func ReadPlan(path string) (*Plan, error) {
	fh, err := safefile.OpenRegular(path, "plan file")
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxPlanBytes+1))
	fh.Close()
	if err != nil {
		return nil, fmt.Errorf("reading plan file %s: %w", path, err)
	}
	p, err := decodePlan(data)
	if err != nil {
		return nil, fmt.Errorf("plan file %s: %w", path, err)
	}
	p.path = path
	if err := p.mapSideFile(path); err != nil {
		return nil, err
	}
	return p, nil
}

// Files lists the files the model reads while it runs: the plan, its
// repacked weights and the GGUF. No output may be one of them.
func (m *Model) Files() []string { return append(m.Plan.Files(), m.File.Path()) }

// Files lists the plan file, its repacked weights and the GGUF it was
// compiled from, as far as they are known.
func (p *Plan) Files() []string {
	var files []string
	for _, f := range []string{p.path, p.sidePath, p.Model.AbsPath} {
		if f != "" {
			files = append(files, f)
		}
	}
	return files
}

// decodePlan parses and checks a plan's JSON; errors name the problem.
func decodePlan(data []byte) (*Plan, error) {
	if err := checkPlanBytes(data); err != nil {
		return nil, err
	}
	var head struct {
		Format  string `json:"format"`
		Version any    `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, describeJSONError(data, err)
	}
	if head.Format != PlanFormat {
		return nil, fmt.Errorf("not a weft plan file (format %q, want %q): give a plan written by graphc compile", head.Format, PlanFormat)
	}
	v, ok := head.Version.(float64)
	if !ok {
		return nil, fmt.Errorf("the plan has no version number (damaged or edited by hand): %s", recompile)
	}
	if v != PlanVersion {
		return nil, fmt.Errorf("plan version %v, this build reads version %d: %s", v, PlanVersion, recompile)
	}
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, describeJSONError(data, err)
	}
	if err := p.checkSections(); err != nil {
		return nil, err
	}
	if err := p.checkCustomOps(); err != nil {
		return nil, err
	}
	if err := p.Graph.Verify(); err != nil {
		return nil, fmt.Errorf("invalid graph: %w: %s", err, recompile)
	}
	return &p, nil
}

// checkPlanBytes catches files that are not plan JSON at all before the
// JSON parser gives a cryptic message about them.
func checkPlanBytes(data []byte) error {
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(data) > maxPlanBytes:
		return fmt.Errorf("larger than %s, so not a plan: give a plan written by graphc compile", safefile.Bytes(maxPlanBytes))
	case len(trimmed) == 0:
		return fmt.Errorf("the file is empty (an interrupted write?): %s", recompile)
	case bytes.HasPrefix(data, []byte(gguf.Magic)):
		return errors.New("this is a GGUF model, not a plan: run it directly under a name ending in .gguf, or compile it with graphc compile")
	case trimmed[0] != '{':
		return errors.New("not a weft plan file (a plan is a JSON object written by graphc compile)")
	}
	return nil
}

// describeJSONError turns a JSON error into what happened to the file.
func describeJSONError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || (errors.As(err, &syn) && syn.Offset >= int64(len(bytes.TrimRight(data, " \t\r\n")))):
		return fmt.Errorf("the plan is truncated (it ends after %d bytes, inside the JSON): %s", len(data), recompile)
	case errors.As(err, &syn) && isTrailingData(data, syn.Offset):
		return fmt.Errorf("unexpected data after the end of the plan at byte %d (the file was appended to or damaged): %s", syn.Offset-1, recompile)
	case errors.As(err, &syn):
		return fmt.Errorf("damaged plan: JSON syntax error at byte %d (%v): %s", syn.Offset, syn, recompile)
	case errors.As(err, &typ):
		return fmt.Errorf("damaged plan: field %q holds a JSON %s where the plan wants %s: %s", typ.Field, typ.Value, typ.Type, recompile)
	}
	return fmt.Errorf("damaged plan: %v: %s", err, recompile)
}

// isTrailingData reports whether the JSON value ends before off, so the
// syntax error is about what follows it.
func isTrailingData(data []byte, off int64) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v json.RawMessage
	return dec.Decode(&v) == nil && dec.InputOffset() < off
}

// checkSections names a section that a plan cannot run without.
func (p *Plan) checkSections() error {
	missing := func(what string) error {
		return fmt.Errorf("the plan has no %s (damaged or edited by hand): %s", what, recompile)
	}
	switch {
	case p.Graph == nil || len(p.Graph.Nodes) == 0:
		return missing(`"graph" section`)
	case p.Model.Fingerprint == "" || (p.Model.Path == "" && p.Model.AbsPath == ""):
		return missing(`"model" section (the GGUF's path and fingerprint)`)
	case p.Params.VocabSize <= 0 || p.Params.Layers <= 0:
		return missing(`"params" section (the model's hyperparameters)`)
	case p.Run.Ctx == 0 || p.Run.Batch == 0 || p.Run.KVType == "":
		return missing(`"run" section (context, batch and KV cache type)`)
	case p.PackedFile != "" && (p.PackedSum == "" || p.PackedCRC == ""):
		return missing("checksum for its repacked weights")
	}
	return nil
}

// mapSideFile maps the plan's repacked weights, checks their fingerprint
// at once and starts the full checksum in the background.
func (p *Plan) mapSideFile(planPath string) error {
	if p.PackedFile == "" {
		return nil
	}
	dir := filepath.Dir(planPath)
	if resolved, err := filepath.EvalSymlinks(planPath); err == nil {
		dir = filepath.Dir(resolved)
	}
	side := filepath.Join(dir, filepath.Base(p.PackedFile))
	p.sidePath = side
	var err error
	if p.Packed, p.unmapPacked, err = mapReadOnly(side); err != nil {
		return fmt.Errorf("plan file %s: its repacked weights: %w: %s", planPath, err, recompile)
	}
	if sum := packedSum(p.Packed); sum != p.PackedSum {
		p.closePacked()
		return fmt.Errorf("plan file %s: the repacked weights %s do not belong to this plan (fingerprint %s, plan expects %s): %s", planPath, side, sum, p.PackedSum, recompile)
	}
	p.check.start(p.Packed, p.PackedCRC, side)
	return nil
}

// locateWeights finds the plan's GGUF, never by the working directory:
// the recorded path relative to the plan's folder, the absolute path at
// compile time, then a file of the same name beside the plan.
func (p *Plan) locateWeights(planPath string) (string, error) {
	dir := filepath.Dir(planPath)
	var candidates []string
	if p.Model.RelPath != "" {
		candidates = append(candidates, filepath.Join(dir, p.Model.RelPath))
	}
	if p.Model.AbsPath != "" {
		candidates = append(candidates, p.Model.AbsPath)
	}
	candidates = append(candidates, filepath.Join(dir, filepath.Base(p.Model.Path)))
	for _, c := range candidates {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
			return c, nil
		}
	}
	return "", fmt.Errorf("plan file %s: its model file %s is missing (looked for %q): put the GGUF back or %s", planPath, filepath.Base(p.Model.Path), candidates, recompile)
}

// packedSum fingerprints repacked weights cheaply enough for every load:
// FNV-1a over the length and 256 bytes at every MiB boundary and at the
// end. It catches a side file from another compile (other weights, other
// layouts or sizes) without reading 600 MB; packedCRC covers every byte.
func packedSum(b []byte) string {
	const stride, sample = 1 << 20, 256
	h := fnv.New64a()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	for off := 0; off < len(b); off += stride {
		h.Write(b[off:min(off+sample, len(b))])
	}
	h.Write(b[max(0, len(b)-sample):])
	return fmt.Sprintf("fnv64a:%016x", h.Sum64())
}

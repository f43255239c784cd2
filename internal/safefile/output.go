package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Target is a checked output path.
type Target struct {
	Path    string      // where the data goes (symbolic links resolved)
	InPlace bool        // a character device or a pipe: written directly, never renamed over
	Mode    fs.FileMode // permissions for the new file
}

// CheckOutput decides how out may be written. It fails when out is one of
// inputs (the same inode, whatever the path), a directory, a socket or a
// block device. Character devices and pipes are written in place. A symbolic link is followed, so the link
// stays and its target is replaced.
func CheckOutput(out string, inputs ...string) (Target, error) {
	t := Target{Path: out, Mode: 0o644}
	if out == "" {
		return t, errors.New("empty output path")
	}
	st, err := os.Stat(out)
	if errors.Is(err, fs.ErrNotExist) {
		if resolved, rerr := resolveDanglingParent(out); rerr == nil {
			t.Path = resolved
		}
		return t, checkParent(t.Path)
	}
	if err != nil {
		return t, fmt.Errorf("output %s: %w", out, err)
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if ist, err := os.Stat(in); err == nil && os.SameFile(st, ist) {
			return t, fmt.Errorf("refusing to write %s: it is the input file %s (the same file on disk); choose another output path", out, in)
		}
	}
	switch m := st.Mode(); {
	case m.IsRegular():
		t.Mode = m.Perm()
		if resolved, err := filepath.EvalSymlinks(out); err == nil {
			t.Path = resolved
		}
	case m&fs.ModeCharDevice != 0, m&fs.ModeNamedPipe != 0:
		t.InPlace = true
	default:
		return t, fmt.Errorf("refusing to write %s: it is %s; give a file path", out, describeMode(m))
	}
	return t, nil
}

// resolveDanglingParent resolves symbolic links in the folder of a path that
// does not exist yet.
func resolveDanglingParent(out string) (string, error) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(out))
	if err != nil {
		return out, err
	}
	return filepath.Join(dir, filepath.Base(out)), nil
}

func checkParent(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("output folder %s does not exist: create it first", dir)
	}
	if err != nil {
		return fmt.Errorf("output folder %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("output folder %s is not a folder", dir)
	}
	return nil
}

// Pending is an output being written: a temporary file beside the target,
// or the target itself for a character device. Commit puts it in place;
// Abort (safe to defer, a no-op after Commit) removes it.
type Pending struct {
	*os.File
	target Target
	done   bool
}

// Create checks out against inputs and starts writing it.
func Create(out string, inputs ...string) (*Pending, error) {
	t, err := CheckOutput(out, inputs...)
	if err != nil {
		return nil, err
	}
	if t.InPlace {
		f, err := openInPlace(t.Path)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", out, err)
		}
		return &Pending{File: f, target: t}, nil
	}
	f, err := TempBeside(t.Path)
	if err != nil {
		return nil, err
	}
	return &Pending{File: f, target: t}, nil
}

// Target is where Commit puts the data.
func (p *Pending) Target() string { return p.target.Path }

// Commit syncs the data and renames it over the target.
func (p *Pending) Commit() error {
	if p.done {
		return errors.New("output already committed or aborted")
	}
	p.done = true
	if p.target.InPlace {
		return p.File.Close()
	}
	tmp := p.File.Name()
	err := p.File.Sync()
	if cerr := p.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, p.target.Mode)
	}
	if err == nil {
		err = os.Rename(tmp, p.target.Path)
	}
	if err != nil {
		Discard(tmp)
		return fmt.Errorf("writing %s: %w", p.target.Path, err)
	}
	Forget(tmp)
	syncDir(filepath.Dir(p.target.Path))
	return nil
}

// Abort removes the temporary file; the target is untouched.
func (p *Pending) Abort() {
	if p.done {
		return
	}
	p.done = true
	p.File.Close()
	if !p.target.InPlace {
		Discard(p.File.Name())
	}
}

// WriteFile writes data to out atomically (see Create).
func WriteFile(out string, data []byte, inputs ...string) error {
	p, err := Create(out, inputs...)
	if err != nil {
		return err
	}
	defer p.Abort()
	if _, err := p.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return p.Commit()
}

// syncDir makes a rename in dir durable; failures (some file systems refuse
// to sync folders) are not errors of the write itself.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

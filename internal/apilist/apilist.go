package apilist

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// List returns the exported surface of the module whose root directory
// is root and whose module path is module, sorted, one declaration a line.
func List(root, module string) ([]string, error) {
	dirs, err := packageDirs(root)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, dir := range dirs {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return nil, err
		}
		pkgLines, err := listPackage(dir, path.Join(module, filepath.ToSlash(rel)))
		if err != nil {
			return nil, err
		}
		lines = append(lines, pkgLines...)
	}
	slices.Sort(lines)
	return lines, nil
}

// packageDirs finds the directories that may hold public packages: not
// internal, testdata, hidden or output folders, nor the examples.
func packageDirs(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
			name == "internal" || name == "testdata" || name == "out" || name == "bin" ||
			name == "examples" || name == "cmd") {
			return filepath.SkipDir
		}
		dirs = append(dirs, p)
		return nil
	})
	return dirs, err
}

// listPackage lists one directory's exported declarations, or nothing
// when it holds no importable package.
func listPackage(dir, importPath string) ([]string, error) {
	files, err := goFiles(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	w := &writer{fset: fset, prefix: "pkg " + importPath + ", "}
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			w.decl(d)
		}
	}
	return w.lines, nil
}

// goFiles names the non-test files of the package in dir as linux/amd64
// builds it without tags; none for a command or a folder without Go.
func goFiles(dir string) ([]string, error) {
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = "linux", "amd64", false
	ctx.BuildTags = nil
	bp, err := ctx.ImportDir(dir, 0)
	if err != nil {
		if _, ok := err.(*build.NoGoError); ok {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if bp.Name == "main" {
		return nil, nil
	}
	return bp.GoFiles, nil
}

// writer turns declarations into listing lines.
type writer struct {
	fset   *token.FileSet
	prefix string
	lines  []string
}

func (w *writer) add(format string, args ...any) {
	w.lines = append(w.lines, w.prefix+fmt.Sprintf(format, args...))
}

// expr prints a type or expression on one line.
func (w *writer) expr(e ast.Node) string {
	var b bytes.Buffer
	if err := printer.Fprint(&b, w.fset, e); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func (w *writer) decl(d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		w.funcDecl(d)
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				w.typeSpec(s)
			case *ast.ValueSpec:
				w.valueSpec(d.Tok, s)
			}
		}
	}
}

func (w *writer) funcDecl(d *ast.FuncDecl) {
	if !d.Name.IsExported() {
		return
	}
	sig := strings.TrimPrefix(w.expr(d.Type), "func")
	if d.Recv == nil {
		w.add("func %s%s", d.Name.Name, sig)
		return
	}
	recv := d.Recv.List[0].Type
	if !ast.IsExported(baseTypeName(recv)) {
		return
	}
	w.add("method (%s) %s%s", w.expr(recv), d.Name.Name, sig)
}

// baseTypeName is the name of a receiver's type: T for T, *T, T[P].
func baseTypeName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

func (w *writer) typeSpec(s *ast.TypeSpec) {
	if !s.Name.IsExported() {
		return
	}
	name := s.Name.Name
	if s.TypeParams != nil {
		name += w.typeParams(s.TypeParams)
	}
	alias := ""
	if s.Assign.IsValid() {
		alias = "= "
	}
	switch t := s.Type.(type) {
	case *ast.StructType:
		w.add("type %s %sstruct", name, alias)
		w.fields(s.Name.Name, t.Fields)
	case *ast.InterfaceType:
		w.add("type %s %sinterface", name, alias)
		w.fields(s.Name.Name, t.Methods)
	default:
		w.add("type %s %s%s", name, alias, w.expr(s.Type))
	}
}

func (w *writer) typeParams(fl *ast.FieldList) string {
	var parts []string
	for _, f := range fl.List {
		var names []string
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
		parts = append(parts, strings.Join(names, ", ")+" "+w.expr(f.Type))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// fields lists a struct's exported fields or an interface's methods and
// embedded types.
func (w *writer) fields(owner string, fl *ast.FieldList) {
	for _, f := range fl.List {
		if len(f.Names) == 0 {
			w.add("type %s, embedded %s", owner, w.expr(f.Type))
			continue
		}
		for _, n := range f.Names {
			if !n.IsExported() {
				continue
			}
			if ft, ok := f.Type.(*ast.FuncType); ok {
				w.add("type %s, method %s%s", owner, n.Name, strings.TrimPrefix(w.expr(ft), "func"))
				continue
			}
			w.add("type %s, field %s %s", owner, n.Name, w.expr(f.Type))
		}
	}
}

func (w *writer) valueSpec(tok token.Token, s *ast.ValueSpec) {
	kind := "var"
	if tok == token.CONST {
		kind = "const"
	}
	for _, n := range s.Names {
		if !n.IsExported() {
			continue
		}
		if s.Type != nil {
			w.add("%s %s %s", kind, n.Name, w.expr(s.Type))
		} else {
			w.add("%s %s", kind, n.Name)
		}
	}
}

// Undocumented lists the exported declarations of the module's public
// packages that have no doc comment, as "file:line name". Error and
// String methods are exempt: their meaning is the interface's.
func Undocumented(root string) ([]string, error) {
	dirs, err := packageDirs(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, dir := range dirs {
		files, err := goFiles(dir)
		if err != nil {
			return nil, err
		}
		for _, name := range files {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			rel, _ := filepath.Rel(root, filepath.Join(dir, name))
			for _, n := range undocumented(f) {
				out = append(out, fmt.Sprintf("%s:%d %s", filepath.ToSlash(rel), fset.Position(n.Pos()).Line, n.Name))
			}
		}
	}
	return out, nil
}

// undocumented returns the names of f's exported declarations without a
// doc comment (a group's comment counts for its members, a trailing line
// comment for a constant or variable).
func undocumented(f *ast.File) []*ast.Ident {
	var out []*ast.Ident
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			exempt := d.Recv != nil && (d.Name.Name == "Error" || d.Name.Name == "String" ||
				!ast.IsExported(baseTypeName(d.Recv.List[0].Type)))
			if d.Name.IsExported() && d.Doc == nil && !exempt {
				out = append(out, d.Name)
			}
		case *ast.GenDecl:
			if d.Doc != nil {
				continue
			}
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && s.Doc == nil && s.Comment == nil {
						out = append(out, s.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && s.Doc == nil && s.Comment == nil {
							out = append(out, n)
						}
					}
				}
			}
		}
	}
	return out
}

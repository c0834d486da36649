// Command exportcount counts the exported identifiers of a module's public
// packages the way issue 33 counts them: exported functions, methods of
// exported types, exported types, fields (and interface methods) of exported
// types, consts and vars. Test files, main packages, testdata and internal/
// directories are skipped. Usage: exportcount [-v] dir...
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	verbose := flag.Bool("v", false, "print the count of every package")
	flag.Parse()
	total := 0
	for _, root := range flag.Args() {
		n, err := countModule(root, *verbose)
		if err != nil {
			fmt.Fprintln(os.Stderr, "exportcount:", err)
			os.Exit(1)
		}
		fmt.Printf("%-40s %d\n", root, n)
		total += n
	}
	fmt.Printf("%-40s %d\n", "total", total)
}

// countModule walks root, skipping nested modules other than root itself.
func countModule(root string, verbose bool) (int, error) {
	per := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root {
			if name == "testdata" || name == "internal" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		n, err := countDir(path)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if n > 0 {
			per[path] = n
		}
		return nil
	})
	total := 0
	keys := make([]string, 0, len(per))
	for k, n := range per {
		keys = append(keys, k)
		total += n
	}
	if verbose {
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Printf("  %-38s %d\n", k, per[k])
		}
	}
	return total, err
}

func countDir(dir string) (int, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return 0, err
		}
		if f.Name.Name == "main" {
			continue
		}
		n += countFile(f)
	}
	return n, nil
}

func countFile(f *ast.File) int {
	n := 0
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil || exportedRecv(d.Recv) {
				n++
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						n += 1 + members(s.Type)
					}
				case *ast.ValueSpec:
					for _, id := range s.Names {
						if id.IsExported() {
							n++
						}
					}
				}
			}
		}
	}
	return n
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(r *ast.FieldList) bool {
	t := r.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.ParenExpr:
			t = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}

// members counts the exported fields of a struct type or methods of an
// interface type (embedded exported types count once).
func members(t ast.Expr) int {
	var fl *ast.FieldList
	switch x := t.(type) {
	case *ast.StructType:
		fl = x.Fields
	case *ast.InterfaceType:
		fl = x.Methods
	default:
		return 0
	}
	n := 0
	for _, f := range fl.List {
		if len(f.Names) == 0 {
			if id := embeddedName(f.Type); id != nil && id.IsExported() {
				n++
			}
			continue
		}
		for _, id := range f.Names {
			if id.IsExported() {
				n++
			}
		}
	}
	return n
}

func embeddedName(t ast.Expr) *ast.Ident {
	switch x := t.(type) {
	case *ast.Ident:
		return x
	case *ast.StarExpr:
		return embeddedName(x.X)
	case *ast.SelectorExpr:
		return x.Sel
	case *ast.IndexExpr:
		return embeddedName(x.X)
	}
	return nil
}

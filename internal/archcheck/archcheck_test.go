package archcheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const modulePath = "github.com/forestd/forestd"

// layers is ARCHITECTURE.md's "Layers" table: each package's forestd
// imports, and the table's order (index 0 is the top line).
type layers struct {
	imports map[string][]string
	line    map[string]int
}

// parseLayers reads the fenced ```imports block of ARCHITECTURE.md.
func parseLayers(doc string) (layers, error) {
	l := layers{imports: map[string][]string{}, line: map[string]int{}}
	start := strings.Index(doc, "```imports\n")
	if start < 0 {
		return l, fmt.Errorf("ARCHITECTURE.md: no ```imports block in section Layers")
	}
	body := doc[start+len("```imports\n"):]
	end := strings.Index(body, "```")
	if end < 0 {
		return l, fmt.Errorf("ARCHITECTURE.md: the ```imports block is not closed")
	}
	for i, text := range strings.Split(strings.TrimSpace(body[:end]), "\n") {
		pkg, deps, ok := strings.Cut(text, "->")
		pkg = strings.TrimSpace(pkg)
		if !ok || pkg == "" {
			return l, fmt.Errorf("ARCHITECTURE.md: imports line %d %q: want \"pkg -> a, b\"", i+1, text)
		}
		if _, dup := l.imports[pkg]; dup {
			return l, fmt.Errorf("ARCHITECTURE.md: imports line %d: package %s listed twice", i+1, pkg)
		}
		list := []string{}
		for _, d := range strings.Split(deps, ",") {
			if d = strings.TrimSpace(d); d != "" {
				list = append(list, d)
			}
		}
		l.imports[pkg] = list
		l.line[pkg] = i
	}
	return l, nil
}

// parseFileMap returns the packages (first cells) of the "File map" table,
// without a trailing slash.
func parseFileMap(doc string) (map[string]bool, error) {
	start := strings.Index(doc, "\n## File map\n")
	if start < 0 {
		return nil, fmt.Errorf("ARCHITECTURE.md: no section File map")
	}
	section := doc[start+1:]
	if next := strings.Index(section[3:], "\n## "); next >= 0 {
		section = section[:next+3]
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(section))
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) < 3 || !strings.HasPrefix(sc.Text(), "| `") {
			continue
		}
		for _, name := range strings.Split(cells[1], ",") {
			name = strings.Trim(strings.TrimSpace(name), "`")
			names[strings.TrimSuffix(name, "/")] = true
		}
	}
	return names, nil
}

// goListImports runs `go list` in dir and returns each package's imports
// of the forestd module, both as paths relative to the module.
func goListImports(t *testing.T, dir string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v\n%s", dir, err, stderr.Bytes())
	}
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := rel(fields[0])
		if !ok {
			t.Fatalf("go list in %s: package %s is outside %s", dir, fields[0], modulePath)
		}
		deps := []string{}
		for _, imp := range fields[1:] {
			if r, ok := rel(imp); ok {
				deps = append(deps, r)
			}
		}
		got[pkg] = deps
	}
	return got
}

func rel(path string) (string, bool) {
	if path == modulePath {
		return "", false
	}
	r, ok := strings.CutPrefix(path, modulePath+"/")
	return r, ok
}

// check compares the table and the file map with the packages' real
// imports and returns every difference.
func check(l layers, fileMap map[string]bool, got map[string][]string) []string {
	var problems []string
	pkgs := make([]string, 0, len(got))
	for p := range got {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		if !fileMap[p] {
			problems = append(problems, fmt.Sprintf("package %s is not in the File map", p))
		}
		allowed, listed := l.imports[p]
		if !listed {
			problems = append(problems, fmt.Sprintf("package %s is not in the Layers table", p))
			continue
		}
		real := map[string]bool{}
		for _, d := range got[p] {
			real[d] = true
			if !contains(allowed, d) {
				problems = append(problems, fmt.Sprintf("%s imports %s, which the Layers table does not list", p, d))
			}
		}
		for _, d := range allowed {
			if !real[d] {
				problems = append(problems, fmt.Sprintf("the Layers table says %s imports %s; it does not", p, d))
			}
			if dl, ok := l.line[d]; ok && dl <= l.line[p] {
				problems = append(problems, fmt.Sprintf("%s imports %s, which the Layers table puts above it", p, d))
			}
		}
	}
	var extra []string
	for p := range l.imports {
		if _, ok := got[p]; !ok {
			extra = append(extra, fmt.Sprintf("the Layers table lists %s, which is not a package", p))
		}
	}
	sort.Strings(extra)
	return append(problems, extra...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestArchitecture checks ARCHITECTURE.md's Layers table and File map
// against the packages of both modules.
func TestArchitecture(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := parseLayers(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	fileMap, err := parseFileMap(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	got := goListImports(t, root)
	for p, deps := range goListImports(t, filepath.Join(root, "connectors", "benthos")) {
		got[p] = deps
	}
	for _, p := range check(l, fileMap, got) {
		t.Error("ARCHITECTURE.md: " + p)
	}
}

// TestCheckFinds shows that check reports each kind of difference.
func TestCheckFinds(t *testing.T) {
	doc := "```imports\na -> b, c\nb -> \nc ->\nd -> a\n```\n\n## File map\n\n| package | owns |\n|---|---|\n| `a`, `b/` | x |\n| `c` | y |\n"
	l, err := parseLayers(doc)
	if err != nil {
		t.Fatal(err)
	}
	fm, err := parseFileMap(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{"a": {"b", "e"}, "b": nil, "c": {"b"}, "e": nil}
	want := []string{
		"a imports e, which the Layers table does not list",
		"the Layers table says a imports c; it does not",
		"c imports b, which the Layers table does not list",
		"package e is not in the File map",
		"package e is not in the Layers table",
		"the Layers table lists d, which is not a package",
	}
	if p := check(l, fm, got); strings.Join(p, "\n") != strings.Join(want, "\n") {
		t.Errorf("check:\n%s\nwant:\n%s", strings.Join(p, "\n"), strings.Join(want, "\n"))
	}
	got["b"] = []string{"a"}
	l.imports["b"] = []string{"a"}
	if p := check(l, fm, got); !contains(p, "b imports a, which the Layers table puts above it") {
		t.Errorf("check does not report an upward import: %q", p)
	}
}

package e2e

import (
	"bytes"
	"encoding/csv"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readmeProgram returns the first Go code block of README's "Embedding
// forestd in Go" quick start, exactly as printed.
func readmeProgram(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n### Embedding forestd in Go\n")
	if i < 0 {
		t.Fatal("README has no quick start \"### Embedding forestd in Go\"")
	}
	s = s[i+1:]
	start := strings.Index(s, "\n```go\n")
	if next := strings.Index(s, "\n#"); start < 0 || next >= 0 && start > next {
		t.Fatal("the section's first code block is not a Go block")
	}
	s = s[start+len("\n```go\n"):]
	end := strings.Index(s, "\n```\n")
	if end < 0 {
		t.Fatal("unterminated code block")
	}
	return s[:end+1]
}

// TestReadmeEmbeddingReleases: README's program releases every Arrow
// record it holds — those files.ReadPaths returns (recs) and those
// Model.Score returns (preds) — as arrow-go asks of every record's owner
// (issue 33: the example never released them). Each slice must be ranged
// over with a Release call on its element.
func TestReadmeEmbeddingReleases(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", readmeProgram(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	released := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		r, ok := n.(*ast.RangeStmt)
		if !ok {
			return true
		}
		slice, ok1 := r.X.(*ast.Ident)
		elem, ok2 := r.Value.(*ast.Ident)
		if !ok1 || !ok2 {
			return true
		}
		ast.Inspect(r.Body, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Release" {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == elem.Name {
						released[slice.Name] = true
					}
				}
			}
			return true
		})
		return true
	})
	for _, name := range []string{"recs", "preds"} {
		if !released[name] {
			t.Errorf("README's embedding program does not release the records of %s", name)
		}
	}
}

// buildReadmeProgram builds the README program in a module of its own that
// requires forestd (replaced by this checkout), as a user's program would.
func buildReadmeProgram(t *testing.T) string {
	t.Helper()
	src := readmeProgram(t)
	if !strings.HasPrefix(src, "package main\n") {
		t.Fatalf("the README program does not start with package main:\n%s", src)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module readme\n\ngo 1.26\n\nrequire github.com/forestd/forestd v0.0.0\n\nreplace github.com/forestd/forestd => " + root + "\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(src)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "predict")
	cmd := exec.Command("go", "build", "-mod=mod", "-o", bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the README program does not build: %v\n%s", err, out)
	}
	return bin
}

// TestReadmeEmbedding: README's embedding program compiles as printed and
// prints, one line per input row, what `forestd score` writes: the class
// of a digits classifier (Arrow IPC input written by Arrow JS) and the
// three values of a multi-output swiss-roll model (CSV input).
func TestReadmeEmbedding(t *testing.T) {
	t.Parallel()
	bin := buildReadmeProgram(t)
	dir := t.TempDir()
	digits := filepath.Join(dir, "digits.model")
	forestdJSON(t, "train", "--in", filepath.Join(dataDir, "digits.parquet"), "--label", "label", "--trees", "20", "--out", digits)
	swiss := filepath.Join(dir, "swiss.csv")
	forestdJSON(t, "gen", "swissroll", "--n", "300", "--seed", "4", "--out", swiss)
	multi := filepath.Join(dir, "multi.model")
	forestdJSON(t, "train", "--in", swiss, "--label", "y0,y1,y2", "--trees", "10", "--out", multi)
	for _, c := range []struct {
		model, in string
		cols      []string
		numeric   bool
	}{
		{digits, filepath.Join(dataDir, "digits.arrows"), []string{"prediction"}, false},
		{multi, swiss, []string{"y0", "y1", "y2"}, true},
	} {
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, c.model, c.in)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("README program on %s: %v\n%s", c.in, err, errb.String())
		}
		got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		want := scoredColumns(t, c.model, c.in, c.cols)
		if len(got) != len(want) {
			t.Fatalf("%s: %d lines, forestd score gives %d rows", c.in, len(got), len(want))
		}
		for i := range got {
			g := strings.Split(got[i], "\t")
			if len(g) != len(c.cols) {
				t.Fatalf("%s line %d: %q", c.in, i, got[i])
			}
			for k := range g {
				if g[k] == want[i][k] {
					continue
				}
				a, err1 := strconv.ParseFloat(g[k], 64)
				b, err2 := strconv.ParseFloat(want[i][k], 64)
				if !c.numeric || err1 != nil || err2 != nil || a != b {
					t.Fatalf("%s row %d %s: README program %q, forestd score %q", c.in, i, c.cols[k], g[k], want[i][k])
				}
			}
		}
	}
}

// scoredColumns runs `forestd score` into a CSV file and returns the named
// columns, row by row.
func scoredColumns(t *testing.T, model, in string, cols []string) [][]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "p.csv")
	forestdJSON(t, "score", "--model", model, "--in", in, "--out", out)
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	idx := make([]int, len(cols))
	for k, c := range cols {
		idx[k] = -1
		for j, h := range rows[0] {
			if h == c {
				idx[k] = j
			}
		}
		if idx[k] < 0 {
			t.Fatalf("forestd score wrote no column %s", c)
		}
	}
	var res [][]string
	for _, r := range rows[1:] {
		v := make([]string, len(cols))
		for k, j := range idx {
			v[k] = r[j]
		}
		res = append(res, v)
	}
	return res
}

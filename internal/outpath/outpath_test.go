package outpath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChecks: an output that is an input (itself, through a link, or a file
// of an input directory) is refused naming both; a directory output is held
// to lake.CheckOutDir; Same sees one file through two paths; a parent that
// is missing or a file is named.
func TestChecks(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in", "a.csv")
	if err := os.MkdirAll(filepath.Dir(in), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, []byte("x\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		out    string
		inputs []string
		want   string // "" for no error
	}{
		{in, []string{in}, "is the input " + in},
		{link, []string{in}, "is the input " + in},
		{in, []string{filepath.Dir(in)}, "is the input " + in},
		{filepath.Join(dir, "new.csv"), []string{in}, ""},
		{filepath.Dir(in), []string{in}, filepath.Dir(in)},
		{filepath.Join(dir, "other"), []string{in}, ""},
	} {
		err := NotInput(c.out, c.inputs...)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("NotInput(%s, %v) = %v, want %q", c.out, c.inputs, err, c.want)
		}
	}
	if !Same(link, in) || !Same(in, filepath.Join(dir, "in", ".", "a.csv")) || Same(in, filepath.Join(dir, "b.csv")) {
		t.Error("Same: wrong answer for a link, a dotted path or another file")
	}
	if err := ParentExists(filepath.Join(dir, "missing", "x.model")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("ParentExists of a missing directory: %v", err)
	}
	if err := ParentExists(filepath.Join(in, "x.model")); err == nil || !strings.Contains(err.Error(), in+" is not a directory") {
		t.Errorf("ParentExists below a file: %v", err)
	}
	if err := ParentCreatable(filepath.Join(dir, "a", "b", "x.html")); err != nil {
		t.Errorf("ParentCreatable of new directories: %v", err)
	}
	if err := ParentCreatable(filepath.Join(in, "b", "x.html")); err == nil || !strings.Contains(err.Error(), in+" is not a directory") {
		t.Errorf("ParentCreatable below a file: %v", err)
	}
}

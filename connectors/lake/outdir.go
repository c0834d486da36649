package lake

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// CheckOutDir refuses an output directory (existing or not) that is an
// input directory, lies inside one, or holds an input — the same
// directories through any path or link (os.SameFile): a run writing a tree
// of files there (a scored or mapped lake) would replace the inputs, or
// read its own outputs on the next run. Inputs are what List takes: files,
// directories or globs; an output directory a glob reaches into (one it
// could match files below: lk/scored for lk/*/*.parquet or
// lk/**/*.parquet, not for lk/d=*/*.parquet) lies inside the lake the glob
// names. The error's text begins with out (a caller prefixes its flag or
// option name).
func CheckOutDir(out string, inputs []string) error {
	if out == "" {
		return nil
	}
	outSt, outErr := os.Stat(out)
	for _, in := range inputs {
		if in == "" {
			continue
		}
		matches := []string{in}
		if hasMeta(in) { // a glob, as List reads it
			if m, err := filepath.Glob(in); err == nil && m != nil {
				matches = m
			}
			if globReaches(in, out) {
				return fmt.Errorf("%s lies inside the lake %s: forestd never overwrites its input; choose a directory outside the inputs", out, in)
			}
		}
		for _, p := range matches {
			fi, err := os.Stat(p)
			if err != nil {
				continue
			}
			if fi.IsDir() && within(out, fi) {
				return fmt.Errorf("%s is or lies inside the input directory %s: forestd never overwrites its input; choose a directory outside the inputs", out, p)
			}
			if outErr == nil && outSt.IsDir() && within(p, outSt) {
				return fmt.Errorf("%s holds the input %s: forestd never overwrites its input; choose a directory outside the inputs", out, p)
			}
		}
	}
	return nil
}

// globReaches reports whether the glob pattern could match a file below
// the directory out: out lies below the pattern's fixed directory prefix
// (the root List walks) and the pattern's elements match out's path below
// it, with elements left over for the files ("**" matches any number of
// directories).
func globReaches(pattern, out string) bool {
	root, rest := splitGlob(pattern)
	absRoot, err1 := filepath.Abs(filepath.FromSlash(root))
	absOut, err2 := filepath.Abs(out)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(absRoot, absOut)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return false
	}
	var dirs []string
	if rel != "." {
		dirs = strings.Split(filepath.ToSlash(rel), "/")
	}
	var reach func(pat, dirs []string) bool
	reach = func(pat, dirs []string) bool {
		switch {
		case len(pat) == 0:
			return false
		case pat[0] == "**":
			return true
		case len(dirs) == 0:
			return true
		}
		ok, err := path.Match(pat[0], dirs[0])
		return err == nil && ok && reach(pat[1:], dirs[1:])
	}
	return reach(rest, dirs)
}

// within reports whether p, or one of the directories above it, is the
// file dir (compared with os.SameFile, so through any link).
func within(p string, dir os.FileInfo) bool {
	p, err := filepath.Abs(p)
	if err != nil {
		return false
	}
	for {
		if st, err := os.Stat(p); err == nil && os.SameFile(st, dir) {
			return true
		}
		up := filepath.Dir(p)
		if up == p {
			return false
		}
		p = up
	}
}

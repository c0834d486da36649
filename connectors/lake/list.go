package lake

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// File is one Parquet file of a lake.
type File struct {
	// Path is the file's path as the reader opens it (Root joined with Rel).
	Path string
	// Root is the directory the file was found under: the directory
	// argument, the fixed directory prefix of a glob, or the file's own
	// directory for a file argument, in each case moved up above any
	// trailing hive partition directories (key=value), which go to Rel.
	Root string
	// Rel is the path below Root, slash-separated; outputs mirror it.
	Rel string
	// Partitions are the hive key=value directories of Rel, outermost
	// first.
	Partitions []Partition
	// Err is set on an entry that is not a file but a directory below an
	// argument that could not be read (its permissions): List goes on
	// past it, and OpenFiles skips it with this reason as it skips a bad
	// file (Options.OnError Skip) or stops on it (Fail).
	Err error
}

// Partition is one hive partition directory, key=value.
type Partition struct {
	Key   string
	Value string
	Null  bool // the value is the hive null marker __HIVE_DEFAULT_PARTITION__
}

// hiveNull is the directory value hive, Spark and DuckDB write for a null
// partition value.
const hiveNull = "__HIVE_DEFAULT_PARTITION__"

// List expands paths into the lake's Parquet files. Each argument is
//
//   - a file, taken as it is (Root is its directory);
//   - a directory, walked recursively for files named *.parquet or *.pq
//     (case-insensitive), in lexical order; entries whose name starts
//     with "." or "_" (_SUCCESS, _temporary, .tmp files of an unfinished
//     write) are skipped and symbolic links to directories are not
//     followed;
//   - a glob pattern (containing *, ? or [): the pattern is matched
//     against the slash-separated paths below its longest fixed directory
//     prefix, which becomes Root; "*", "?" and "[...]" match within one
//     path element as in path.Match, and an element "**" matches any
//     number of directories (including none). Only regular files (or
//     links to them) match; hidden and "_" entries are skipped as above.
//
// A file reached through two arguments is listed once, at its first
// position. An argument that matches no Parquet file is an error, as is a
// malformed hive directory name (see ParsePartitions). A directory below
// an argument that cannot be read is listed as an entry with Err set,
// so one unreadable partition does not stop the listing.
func List(paths []string) ([]File, error) {
	if len(paths) == 0 {
		return nil, errors.New("lake: no input paths")
	}
	var out []File
	seen := map[string]bool{}
	add := func(f File) {
		key := filepath.Clean(f.Path)
		if !seen[key] {
			seen[key] = true
			out = append(out, f)
		}
	}
	for _, p := range paths {
		before := len(out)
		if hasMeta(p) {
			fs, err := listGlob(p)
			if err != nil {
				return nil, err
			}
			for _, f := range fs {
				add(f)
			}
			if len(fs) == 0 {
				return nil, fmt.Errorf("lake: %s: the pattern matches no Parquet file", p)
			}
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("lake: %w", err)
		}
		if !st.IsDir() {
			root, prefix := hoist(filepath.Dir(p))
			add(File{Path: p, Root: root, Rel: path.Join(prefix, filepath.Base(p))})
			continue
		}
		fs, err := walk(p, func(string) bool { return true })
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			add(f)
		}
		if len(out) == before && len(fs) == 0 {
			return nil, fmt.Errorf("lake: %s: no Parquet files in the directory", p)
		}
	}
	for i := range out {
		if out[i].Err != nil {
			continue
		}
		parts, err := ParsePartitions(out[i].Rel)
		if err != nil {
			return nil, fmt.Errorf("lake: %s: %w", out[i].Path, err)
		}
		out[i].Partitions = parts
	}
	return out, nil
}

// IsParquetName reports whether a file name has a Parquet extension.
func IsParquetName(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, ".parquet") || strings.HasSuffix(n, ".pq")
}

func hidden(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

func hasMeta(p string) bool { return strings.ContainsAny(p, "*?[") }

// walk lists the Parquet files below root whose slash-separated relative
// path satisfies match, in lexical order.
func walk(root string, match func(rel string) bool) ([]File, error) {
	return walkFS(os.DirFS(root), root, match)
}

// walkFS is walk over fsys, the file system rooted at root: a directory
// it cannot read below root becomes an entry with Err set (File.Err).
func walkFS(fsys fs.FS, root string, match func(rel string) bool) ([]File, error) {
	var out []File
	top, prefix := hoist(root)
	err := fs.WalkDir(fsys, ".", func(rel string, d fs.DirEntry, err error) error {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err != nil {
			if rel == "." || d == nil || !d.IsDir() {
				return fmt.Errorf("lake: %w", err)
			}
			out = append(out, File{Path: p, Root: top, Rel: path.Join(prefix, rel),
				Err: fmt.Errorf("lake: directory %s cannot be read: %w", p, err)})
			return fs.SkipDir
		}
		if rel == "." {
			return nil
		}
		if hidden(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !IsParquetName(d.Name()) {
			return nil
		}
		if !d.Type().IsRegular() {
			if d.Type()&fs.ModeSymlink == 0 {
				return nil
			}
			if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
				return nil
			}
		}
		if match(rel) {
			out = append(out, File{Path: p, Root: top, Rel: path.Join(prefix, rel)})
		}
		return nil
	})
	return out, err
}

// hoist moves the trailing hive partition directories (key=value) of dir
// into a relative prefix, so that a lake entered below its root (a
// partition directory, a file in one, or a glob whose fixed part names
// partitions) keeps its partition columns: it returns the deepest
// ancestor of dir that is not a partition directory, and the rest.
func hoist(dir string) (root, prefix string) {
	clean := filepath.Clean(dir)
	var parts []string
	for {
		base := filepath.Base(clean)
		if !strings.Contains(base, "=") || base == clean {
			break
		}
		parts = append([]string{base}, parts...)
		clean = filepath.Dir(clean)
	}
	if len(parts) == 0 {
		return dir, ""
	}
	return clean, strings.Join(parts, "/")
}

// splitGlob splits a glob pattern into its fixed directory prefix — the
// directory List walks for it, slash-separated ("." or "/" when the
// pattern starts with a wildcard) — and the pattern elements below it.
func splitGlob(pattern string) (root string, rest []string) {
	slashed := filepath.ToSlash(pattern)
	elems := strings.Split(slashed, "/")
	k := 0
	for k < len(elems) && !hasMeta(elems[k]) {
		k++
	}
	root = strings.Join(elems[:k], "/")
	switch {
	case root == "" && strings.HasPrefix(slashed, "/"):
		root = "/"
	case root == "":
		root = "."
	}
	return root, elems[k:]
}

// listGlob splits pattern into its fixed directory prefix and the rest,
// walks the prefix and keeps the files whose relative path matches.
func listGlob(pattern string) ([]File, error) {
	root, rest := splitGlob(pattern)
	for _, e := range rest {
		if _, err := path.Match(strings.ReplaceAll(e, "**", "*"), ""); err != nil {
			return nil, fmt.Errorf("lake: pattern %s: %w", pattern, err)
		}
	}
	root = filepath.FromSlash(root)
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("lake: pattern %s: %w", pattern, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("lake: pattern %s: %s is not a directory", pattern, root)
	}
	return walk(root, func(rel string) bool { return matchGlob(rest, strings.Split(rel, "/")) })
}

// matchGlob reports whether the path elements name match the pattern
// elements pat: "**" matches any number of elements (including none), any
// other element is matched with path.Match against exactly one element.
// A malformed element matches nothing.
func matchGlob(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			// Collapse runs of ** and try every split point.
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := 0; i <= len(name); i++ {
				if matchGlob(pat, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		ok, err := path.Match(pat[0], name[0])
		if err != nil || !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// ParsePartitions returns the hive partitions named by the directories of
// rel (a slash-separated path below a lake root; the last element is the
// file and is ignored). A directory element containing "=" is a partition
// key=value: the key must be non-empty and the value is URL-unescaped
// (hive escapes "/", "=", "%" and other special characters as %XX); the
// value __HIVE_DEFAULT_PARTITION__ is a null. Directories without "=" are
// plain directories and contribute nothing. A key appearing twice, an
// empty key or a malformed escape is an error naming the element.
func ParsePartitions(rel string) ([]Partition, error) {
	elems := strings.Split(rel, "/")
	var out []Partition
	for _, e := range elems[:len(elems)-1] {
		k, v, ok := strings.Cut(e, "=")
		if !ok {
			continue
		}
		if k == "" {
			return nil, fmt.Errorf("partition directory %q has an empty key", e)
		}
		key, err := url.PathUnescape(k)
		if err != nil {
			return nil, fmt.Errorf("partition directory %q: bad escape in the key: %w", e, err)
		}
		p := Partition{Key: key}
		if v == hiveNull {
			p.Null = true
		} else if p.Value, err = url.PathUnescape(v); err != nil {
			return nil, fmt.Errorf("partition directory %q: bad escape in the value: %w", e, err)
		}
		for _, q := range out {
			if q.Key == p.Key {
				return nil, fmt.Errorf("partition key %s appears twice in %s", p.Key, rel)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

package frame

import (
	"fmt"
	"slices"
	"strings"
)

// SplitLabel splits a label specification as the command line, the
// daemon's configuration and the processors take it — one column, or
// several comma-separated learnt as one multi-output regression target
// (Options.Targets) — into column names, trimming the spaces around each.
// An empty name stays in the list (a doubled or trailing comma) for
// CheckTargets to report, rather than being dropped silently.
func SplitLabel(spec string) []string {
	names := strings.Split(spec, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	return names
}

// CheckTargets checks the columns of a multi-output target, as SplitLabel
// gives them, before any data is read (FromRecords later checks them
// against the schema): every one named, none twice, none also a feature
// or excluded. The error quotes the targets as listed.
func CheckTargets(targets, features, exclude []string) error {
	all := strings.Join(targets, ",")
	seen := make(map[string]bool, len(targets))
	for _, t := range targets {
		switch {
		case t == "":
			return fmt.Errorf("frame: targets %q: empty column name", all)
		case seen[t]:
			return fmt.Errorf("frame: targets %q: column %q twice", all, t)
		case slices.Contains(features, t):
			return fmt.Errorf("frame: target %q is also listed as a feature", t)
		case slices.Contains(exclude, t):
			return fmt.Errorf("frame: target %q is also listed as excluded", t)
		}
		seen[t] = true
	}
	return nil
}

// Package colname words the errors about a column that is not there: the
// columns that are (up to MaxListed) and the closest name to the one asked
// for, so that a typo ("lable") is answered with the name meant ("did you
// mean \"label\"?") rather than a list cut before it. Every column lookup
// of the command line, the daemon and the processors — labels, kept
// columns, --features/--exclude, a model's features, a lake's or a Parquet
// file's projection — words its error here (arrowforest/frame wraps it as
// frame.ErrMissingColumn).
package colname

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxListed is the most column names an error lists; the rest are counted.
const MaxListed = 50

// List is names joined by ", ", the first MaxListed of them and a count of
// the rest ("a, b, … (12 more)").
func List(names []string) string {
	if len(names) <= MaxListed {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:MaxListed], ", ") + fmt.Sprintf(", … (%d more)", len(names)-MaxListed)
}

// Closest is the name of have nearest to name — the same name in another
// case first, then the least edit distance (optimal string alignment, over
// lower-case runes) within a third of the name's length (at least 1, at
// most 3; no edits for a name of one or two letters), ties to the earlier
// column — or "" when none is that close.
func Closest(name string, have []string) string {
	lower := strings.ToLower(name)
	for _, h := range have {
		if h != name && strings.ToLower(h) == lower {
			return h
		}
	}
	n := utf8.RuneCountInString(name)
	if n < 3 {
		return "" // one edit from "c" is any one-letter name: no hint
	}
	limit := min(max(n/3, 1), 3)
	best, bestD := "", limit+1
	for _, h := range have {
		if h == name {
			continue
		}
		if d := distance(lower, strings.ToLower(h), bestD); d < bestD {
			best, bestD = h, d
		}
	}
	return best
}

// Suggest is `; did you mean "X"?` for the closest name of have, or "".
func Suggest(name string, have []string) string {
	if c := Closest(name, have); c != "" {
		return "; did you mean " + strconv.Quote(c) + "?"
	}
	return ""
}

// SuggestAll is Suggest for several missing names: `; did you mean "X"?`
// for one, `; did you mean "X" for "x", "Y" for "y"?` for several (those
// with a close name), or "".
func SuggestAll(missing, have []string) string {
	if len(missing) == 1 {
		return Suggest(missing[0], have)
	}
	var hints []string
	for _, name := range missing {
		if c := Closest(name, have); c != "" {
			hints = append(hints, strconv.Quote(c)+" for "+strconv.Quote(name))
		}
	}
	if len(hints) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(hints, ", ") + "?"
}

// NotFound is the one wording of a missing column: `what column "name" not
// found (columns: …); did you mean "X"?` (what: "label", "feature",
// "kept", …; empty for none).
func NotFound(what, name string, have []string) string {
	if what != "" {
		what += " "
	}
	return fmt.Sprintf("%scolumn %q not found (columns: %s)%s", what, name, List(have), Suggest(name, have))
}

// distance is the optimal string alignment distance of a and b (the
// Levenshtein distance with a swap of two neighbouring letters as one
// edit: "lable" is one edit from "label"), or any value ≥ bound once it is
// sure to reach bound (a length difference alone does).
func distance(a, b string, bound int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d >= bound || -d >= bound {
		return bound
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= bound {
			return bound
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

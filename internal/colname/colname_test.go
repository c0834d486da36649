package colname

import (
	"fmt"
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	cols := []string{"id", "f0", "f1", "f2", "label", "sepal_length_cm", "Species"}
	for name, want := range map[string]string{
		"lable":           "label", // a transposition: distance 2 of 5 letters
		"labl":            "label",
		"LABEL":           "label", // another case first
		"species":         "Species",
		"sepal_lenght_cm": "sepal_length_cm",
		"f9":              "", // one edit of a two-letter name: too short to hint
		"labe1":           "label",
		"price":           "", // nothing close
		"x":               "",
	} {
		if got := Closest(name, cols); got != want {
			t.Errorf("Closest(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestNotFoundListsAndSuggests: the column meant is suggested even when it
// is past the listed columns, which stop at MaxListed with a count.
func TestNotFoundListsAndSuggests(t *testing.T) {
	var cols []string
	for i := 0; i < 80; i++ {
		cols = append(cols, fmt.Sprintf("f%02d", i))
	}
	cols = append(cols, "label")
	msg := NotFound("label", "lable", cols)
	for _, want := range []string{`label column "lable" not found (columns: f00, f01,`, "f49, … (31 more))", `; did you mean "label"?`} {
		if !strings.Contains(msg, want) {
			t.Errorf("%s\nlacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "f50") {
		t.Errorf("%s\nlists more than %d columns", msg, MaxListed)
	}
}

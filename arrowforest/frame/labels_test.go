package frame

import (
	"slices"
	"strings"
	"testing"
)

func TestSplitLabel(t *testing.T) {
	for spec, want := range map[string][]string{
		"y":         {"y"},
		" y ":       {"y"},
		"a,b":       {"a", "b"},
		" a , b ,c": {"a", "b", "c"},
		"a,,b":      {"a", "", "b"},
		"a,":        {"a", ""},
		"":          {""},
	} {
		if got := SplitLabel(spec); !slices.Equal(got, want) {
			t.Errorf("SplitLabel(%q) = %q, want %q", spec, got, want)
		}
	}
}

func TestCheckTargets(t *testing.T) {
	for _, c := range []struct {
		spec              string
		features, exclude []string
		want              string // "" = valid
	}{
		{"a,b", nil, nil, ""},
		{"a,b,c", []string{"x"}, []string{"id"}, ""},
		{"a,,b", nil, nil, `targets "a,,b": empty column name`},
		{"a,", nil, nil, "empty column name"},
		{"a,b, a", nil, nil, `column "a" twice`},
		{"a,b", []string{"x", "b"}, nil, `target "b" is also listed as a feature`},
		{"a,b", nil, []string{"a"}, `target "a" is also listed as excluded`},
	} {
		err := CheckTargets(SplitLabel(c.spec), c.features, c.exclude)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.spec, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: error %v, want one containing %q", c.spec, err, c.want)
		}
	}
}

package cli

import (
	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
)

// sourceFrame reads a model's source columns from records and turns them
// into the frame its trees score: the model's own feature mapping and
// derived inputs applied (forest.SourceColumns, forest.FromSource), so a
// model trained behind forestd serve's select stage scores raw data.
func sourceFrame(f *forest.Forest, schema *arrow.Schema, recs []arrow.Record) (*frame.Frame, error) {
	names, levels := f.SourceColumns()
	fr, err := frame.FeaturesFromRecords(schema, recs, names, levels)
	if err != nil {
		return nil, err
	}
	return f.FromSource(fr)
}

// sourceOptions are the frame options that read a model's source columns
// and the label (eval); the frame they give goes through f.FromSource.
func sourceOptions(f *forest.Forest, label string) frame.Options {
	names, levels := f.SourceColumns()
	var lv map[string][]string
	for j, l := range levels {
		if l != nil {
			if lv == nil {
				lv = map[string][]string{}
			}
			lv[names[j]] = l
		}
	}
	return frame.Options{Label: label, Task: f.Task, Features: names, Levels: lv}
}

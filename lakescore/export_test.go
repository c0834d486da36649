package lakescore

import "github.com/forestd/forestd/scoring"

// DataFault exposes dataFault to the external tests.
var DataFault = dataFault

// Plan is what a run of m with opts sizes before reading: the rows per
// chunk, the memory it sets aside for scoring (chunks in flight and the
// scorers' blocks, the output writer's compressor) and the budget left
// to row groups in flight.
func Plan(m *scoring.Model, opts Options) (chunk, work, rowGroups int64, err error) {
	s, err := newScorer(m, "", opts)
	if err != nil {
		return 0, 0, 0, err
	}
	return s.chunk, s.work, s.lopts.MaxMemory, nil
}

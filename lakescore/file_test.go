package lakescore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/connectors/files"
	"github.com/forestd/forestd/lakescore"
	"github.com/forestd/forestd/scoring"
)

// wholeScore is what forestd score did before ScoreFile, and still does
// for inputs ScoreFile does not take: read the input whole, one Score
// call, files.WriteFile.
func wholeScore(t *testing.T, m *scoring.Model, in, out string, opts scoring.Options) {
	t.Helper()
	schema, recs := readFile(t, in)
	defer release(recs)
	outSchema, err := m.PredictionSchema(schema, opts)
	if err != nil {
		t.Fatal(err)
	}
	preds, err := m.Score(recs, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer release(preds)
	if err := files.WriteFile(out, outSchema, preds, files.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// loaded is a ScoreFile load of m.
func loaded(m *scoring.Model) func() (*scoring.Model, error) {
	return func() (*scoring.Model, error) { return m, nil }
}

// predSchema is a ScoreFile check of m with opts.
func predSchema(m *scoring.Model, opts scoring.Options) func(*arrow.Schema) (*arrow.Schema, error) {
	return func(s *arrow.Schema) (*arrow.Schema, error) { return m.PredictionSchema(s, opts) }
}

// TestScoreFileSameBytes: a file of 20 row groups of 1,000 rows, and one
// of 400,000 rows in row groups of 40,000, scored by ScoreFile are byte
// for byte the files a whole read, one Score call and WriteFile make, for
// every kind of probability columns, a kept column, a first row other
// than 0 and 1 or 2 threads. Small row groups are scored together (the
// 20 in one Score call; the 10 in calls of two, 80,000 rows), every
// buffer goes back to the run's pool, and across calls most are reused
// rather than made (a whole read makes every one).
func TestScoreFileSameBytes(t *testing.T) {
	m := letterModel(t)
	small := filepath.Join(dataDir, "letter_recognition_zstd_rg1000.parquet")
	dir := t.TempDir()
	schema, recs := readFile(t, filepath.Join(dataDir, "letter_recognition.parquet"))
	var twenty []arrow.Record
	for range 20 {
		twenty = append(twenty, recs...)
	}
	big := filepath.Join(dir, "big.parquet")
	err := files.WriteFile(big, schema, twenty, files.WriteOptions{RowGroupRows: 40000})
	release(recs)
	if err != nil {
		t.Fatal(err)
	}
	for i, opts := range []scoring.Options{
		{Source: small, Threads: 2, Keep: []string{"label"}},
		{Source: small, Threads: 1, Probs: "top2"},
		{Source: "x", Threads: 2, Probs: "none", FirstRow: 7},
	} {
		for _, c := range []struct {
			in          string
			rows, calls int64
		}{{small, 20000, 1}, {big, 400000, 5}} {
			want, got := filepath.Join(dir, "want.parquet"), filepath.Join(dir, "got.parquet")
			wholeScore(t, m, c.in, want, opts)
			rows, _, handled, err := lakescore.ScoreFile(context.Background(), loaded(m), []string{c.in}, got, 0, opts, predSchema(m, opts))
			if err != nil || !handled || rows != c.rows {
				t.Fatalf("options %d, %s: rows %d, handled %v, %v", i, c.in, rows, handled, err)
			}
			a, err := os.ReadFile(want)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(got)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Fatalf("options %d, %s: ScoreFile wrote %d bytes, the whole read %d, not the same", i, c.in, len(b), len(a))
			}
			asked, made, live, calls, err := lakescore.ScoreFilePool(m, c.in, got, opts, predSchema(m, opts))
			if err != nil {
				t.Fatal(err)
			}
			if live != 0 || int64(calls) != c.calls || (c.calls > 1 && made*2 > asked) {
				t.Fatalf("options %d, %s: %d Score calls, want %d; %d bytes of buffers handed out, %d made, %d not returned; want half made at most and all returned",
					i, c.in, calls, c.calls, asked, made, live)
			}
		}
	}
}

// TestScoreFileLoadsWhileReading: the model loads while the first row
// group is decoded (a load that waits for the read's first buffer
// returns), and the output is whole.
func TestScoreFileLoadsWhileReading(t *testing.T) {
	m := letterModel(t)
	in := filepath.Join(dataDir, "letter_recognition_zstd_rg1000.parquet")
	out := filepath.Join(t.TempDir(), "p.parquet")
	opts := scoring.Options{Threads: 2}
	overlapped, err := lakescore.ScoreFileOverlap(m, in, out, opts, predSchema(m, opts))
	if err != nil || !overlapped {
		t.Fatalf("overlapped %v, %v", overlapped, err)
	}
	if _, recs := readFile(t, out); len(recs) != 1 || recs[0].NumRows() != 20000 {
		t.Fatalf("%d records in the output", len(recs))
	} else {
		release(recs)
	}
}

// TestScoreFileNotHandled: inputs ScoreFile does not stream are left to
// the whole read, untouched and without loading the model: several files,
// a CSV file, a directory, or an output that is not Parquet; a model of
// several outputs is loaded, then left to the whole read too. An error
// loading the model is returned as it is.
func TestScoreFileNotHandled(t *testing.T) {
	in := filepath.Join(dataDir, "letter_recognition.parquet")
	dir := t.TempDir()
	loads := 0
	noModel := errors.New("no model")
	load := func() (*scoring.Model, error) { loads++; return nil, noModel }
	for _, c := range []struct {
		in  []string
		out string
	}{
		{[]string{in, in}, "p.parquet"},
		{[]string{filepath.Join(dataDir, "letter_recognition.csv.gz")}, "p.parquet"},
		{[]string{dataDir}, "p.parquet"},
		{[]string{in}, "p.csv"},
		{[]string{in}, "p.arrow"},
	} {
		_, _, handled, err := lakescore.ScoreFile(context.Background(), load, c.in, filepath.Join(dir, c.out), 0, scoring.Options{}, nil)
		if handled || err != nil || loads != 0 {
			t.Fatalf("%v into %s: handled %v, %v, %d loads", c.in, c.out, handled, err, loads)
		}
	}
	out := filepath.Join(dir, "p.parquet")
	// a row group (20,000 rows of 17 columns, over 1 MiB decoded) that
	// four times over exceeds the bound
	if _, _, handled, err := lakescore.ScoreFile(context.Background(), load, []string{in}, out, 4<<20, scoring.Options{}, nil); handled || err != nil || loads != 0 {
		t.Fatalf("bound of 4 MiB: handled %v, %v, %d loads", handled, err, loads)
	}
	if _, _, handled, err := lakescore.ScoreFile(context.Background(), load, []string{in}, out, 0, scoring.Options{}, nil); !handled || err != noModel || loads != 1 {
		t.Fatalf("failed load: handled %v, %v, %d loads", handled, err, loads)
	}
	m, rec := swissModel(t)
	defer rec.Release()
	swiss := filepath.Join(t.TempDir(), "s.parquet")
	if err := files.WriteFile(swiss, rec.Schema(), []arrow.Record{rec}, files.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, handled, err := lakescore.ScoreFile(context.Background(), loaded(m), []string{swiss}, out, 0, scoring.Options{}, nil); handled || err != nil {
		t.Fatalf("drf model: handled %v, %v", handled, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("files written: %v", left)
	}
}

// TestScoreFileErrorsLeaveNothing: a check that refuses the schema, a
// corrupt row group after good ones and a cancelled context each end the
// run with their error, no output and no temporary file, and every
// buffer returned to the pool.
func TestScoreFileErrorsLeaveNothing(t *testing.T) {
	m := letterModel(t)
	src, err := os.ReadFile(filepath.Join(dataDir, "letter_recognition_zstd_rg1000.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	inDir, dir := t.TempDir(), t.TempDir()
	good, bad := filepath.Join(inDir, "good.parquet"), filepath.Join(inDir, "bad.parquet")
	if err := os.WriteFile(good, src, 0o644); err != nil {
		t.Fatal(err)
	}
	// junk over the data of row groups 10 to 15 (the footer stays intact)
	junk := bytes.Clone(src)
	for i := len(src) / 2; i < len(src)*3/4; i++ {
		junk[i] = 0xff
	}
	if err := os.WriteFile(bad, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "p.parquet")
	refused := errors.New("refused")
	opts := scoring.Options{Threads: 2}
	_, _, live, _, err := lakescore.ScoreFilePool(m, good, out, opts, func(*arrow.Schema) (*arrow.Schema, error) { return nil, refused })
	if err != refused || live != 0 {
		t.Fatalf("check refusing: %v, %d bytes not returned", err, live)
	}
	_, _, live, _, err = lakescore.ScoreFilePool(m, bad, out, opts, predSchema(m, opts))
	if err == nil || !strings.Contains(err.Error(), "bad.parquet: row group") || live != 0 {
		t.Fatalf("corrupt row group: %v, %d bytes not returned", err, live)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, handled, err := lakescore.ScoreFile(ctx, loaded(m), []string{good}, out, 0, opts, predSchema(m, opts))
	if !handled || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: handled %v, %v", handled, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("files left: %v", left)
	}
}

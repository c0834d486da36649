package e2e

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/forestd/forestd/connectors/files"
)

// digitsIPC returns digits.arrows' schema as an Arrow IPC stream carrying
// the given number of zero-row batches (none: a schema-only stream).
func digitsIPC(t *testing.T, batches int) []byte {
	t.Helper()
	schema, recs, err := files.ReadFile(filepath.Join(dataDir, "digits.arrows"), files.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Release()
	}
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	for i := 0; i < batches; i++ {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		rec := b.NewRecord()
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		b.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestServeZeroRowBatch (reliability issue, item 1): a valid digits-schema
// Arrow IPC stream whose one batch has no rows used to panic the daemon in
// the compiled forest's block split (integer divide by zero) before its
// offset was committed, so every restart died on the same message. Now
// such a message scores to no predictions, its offset commits, the daemon
// stays up, and the rows after it are scored.
func TestServeZeroRowBatch(t *testing.T) {
	t.Parallel()
	brokers, d := digitsDaemon(t, nil, "--output-format", "json")

	ipcType := []string{"content-type=application/vnd.apache.arrow.stream"}
	kcatProduce(t, brokers, featuresTopic, ipcType, digitsIPC(t, 1), digitsIPC(t, 3), digitsIPC(t, 0))
	rows := digitsJSONRows(t, 3)
	kcatLines(t, brokers, featuresTopic, []string{"content-type=application/json"}, rows)

	ps := waitPredictions(t, brokers, "forestd.predictions", 60*time.Second, func(ps []prediction) bool { return len(ps) >= 3 })
	if len(ps) != 3 {
		t.Fatalf("%d predictions for 3 rows", len(ps))
	}
	select {
	case <-d.done:
		t.Fatalf("daemon exited: %s", tail(d.Log(), 20))
	default:
	}
	// every message's offset commits: nothing is left uncommitted
	deadline := time.Now().Add(30 * time.Second)
	for d.metric("forestd_commit_lag") != 0 || d.metric("forestd_commits_total") < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("commit lag %v after 30 s: %s", d.metric("forestd_commit_lag"), tail(d.Log(), 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := d.metric("forestd_dead_letters_total"); n != 0 {
		t.Fatalf("%v dead letters for valid (if empty) messages", n)
	}
	if code := d.stop(10 * time.Second); code != 0 {
		t.Fatalf("daemon exit code %d: %s", code, tail(d.Log(), 20))
	}
}

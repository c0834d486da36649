package model

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/ipc"
)

// TestTuningRoundTrip: a tuned forest's record survives, in a model of
// format version 4.
func TestTuningRoundTrip(t *testing.T) {
	f := tunedForest()
	b, _, err := EncodeBytes(f, Meta{Version: 3})
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := DecodeBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	if !sameForest(g, f) {
		t.Fatalf("decoded tuned forest differs:\n got %+v\nwant %+v", g.Tuning, f.Tuning)
	}
	var old bytes.Buffer
	if _, err := (codec{}).encodeFormat4(&old, f, Meta{Version: 3}); err != nil {
		t.Fatal(err)
	}
	if v := metadata(t, old.Bytes())[KeyFormatVersion]; v != "4" {
		t.Fatalf("tuned model written as format version %s, want 4", v)
	}
	if g, _, err := DecodeBytes(old.Bytes()); err != nil || !sameForest(g, f) {
		t.Fatalf("format-4 tuned model: %v", err)
	}
}

// TestUntunedCarriesNoTuning: an untuned forest's model has neither the
// tuning key nor the tune param, so its bytes are those of earlier
// versions, and it stays at the lowest format version that holds it.
func TestUntunedCarriesNoTuning(t *testing.T) {
	b, _, err := EncodeBytes(classForest(), Meta{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	md := metadata(t, b)
	if _, ok := md[keyTuning]; ok {
		t.Fatal("untuned model has forestd.tuning")
	}
	if strings.Contains(md[keyParams], "tune") {
		t.Fatalf("untuned params mention tuning: %s", md[keyParams])
	}
	if md[KeyFormatVersion] != "5" {
		t.Fatalf("untuned model written as format version %s", md[KeyFormatVersion])
	}
}

// TestTuningVersion: a stream that claims a version before 4 for a tuned
// forest is rejected.
func TestTuningVersion(t *testing.T) {
	for _, v := range []string{"1", "3"} {
		_, _, err := DecodeBytes(craft(t, tunedForest(), func(_ *table, md map[string]string) { md[KeyFormatVersion] = v }))
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "needs version 4") {
			t.Fatalf("tuned forest claimed as version %s: got %v", v, err)
		}
	}
}

// TestTuningCorrupt: crafted models whose tuning record is missing,
// unexpected, malformed or inconsistent are rejected as corrupt.
func TestTuningCorrupt(t *testing.T) {
	setTuning := func(s string) func(*table, map[string]string) {
		return func(_ *table, md map[string]string) { md[keyTuning] = s }
	}
	edit := func(old, new string) func(*table, map[string]string) {
		return func(_ *table, md map[string]string) { md[keyTuning] = strings.Replace(md[keyTuning], old, new, 1) }
	}
	expectCorrupt(t, tunedForest, map[string]func(*table, map[string]string){
		"tuned params, no record": func(_ *table, md map[string]string) { delete(md, keyTuning) },
		"record, untuned params": func(_ *table, md map[string]string) {
			md[keyParams] = strings.Replace(md[keyParams], `,"tune":true`, "", 1)
		},
		"not JSON":            setTuning("{"),
		"null":                setTuning("null"),
		"unknown field":       edit(`"metric"`, `"extra":1,"metric"`),
		"trailing data":       func(_ *table, md map[string]string) { md[keyTuning] += " {}" },
		"regression metric":   edit(`"metric":"error"`, `"metric":"mse"`),
		"one stage":           edit(`"rounds":[[1,2],[3]]`, `"rounds":[[1,2]]`),
		"rounds decrease":     edit(`"rounds":[[1,2],[3]]`, `"rounds":[[2,1],[3]]`),
		"rounds beyond trees": edit(`"rounds":[[1,2],[3]]`, `"rounds":[[1,2],[4]]`),
		"winner out of range": edit(`"winner":2`, `"winner":3`),
		"winner not marked":   edit(`"winner":2`, `"winner":1`),
		"bad stage":           edit(`"stage":2`, `"stage":3`),
		"scores missing":      edit(`"scores":[0.5]`, `"scores":[]`),
		"non-finite score":    edit(`"scores":[0.5]`, `"scores":["NaN"]`),
	})
}

// metadata returns the schema metadata of a model stream.
func metadata(t *testing.T, b []byte) map[string]string {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	md := r.Schema().Metadata()
	out := map[string]string{}
	for i, k := range md.Keys() {
		out[k] = md.Values()[i]
	}
	return out
}

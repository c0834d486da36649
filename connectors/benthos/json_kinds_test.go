package benthos

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// irisFeatures are the members examples/iris.model reads.
const irisFeatures = `"sepal_length_cm": 5.1, "sepal_width_cm": 3.5, "petal_length_cm": 1.4, "petal_width_cm": 0.2`

// checkErrored fails unless exactly the messages in want (index → part of
// the error) are errored.
func checkErrored(t *testing.T, out []got, want map[int]string) {
	t.Helper()
	for i, g := range out {
		w, bad := want[i]
		switch {
		case !bad && g.err != nil:
			t.Errorf("message %d errored: %v", i, g.err)
		case bad && (g.err == nil || !strings.Contains(g.err.Error(), w)):
			t.Errorf("message %d: error %v, want %q", i, g.err, w)
		}
	}
}

// TestScoreJSONSkipsOtherMembers: forestd_score decodes only the model's
// columns, so members it does not read may change kind from message to
// message, or be nested, without erroring anyone (an id given as a string
// first, then as a number or a boolean; a label y given as a number first,
// then as strings, as examples/train_score.yaml's stream does). They must
// still be valid JSON. A member named like a prediction column is
// replaced, not duplicated.
func TestScoreJSONSkipsOtherMembers(t *testing.T) {
	s := startStream(t, 1, `forestd_score: {model: "examples/iris.model"}`)
	msgs := []string{
		`{"id": "a", ` + irisFeatures + `}`,
		`{"id": 5, ` + irisFeatures + `}`,
		`{"id": true, ` + irisFeatures + `}`,
		`{"id": {"n": [1, null]}, ` + irisFeatures + `}`,
		`{"id": [1,], ` + irisFeatures + `}`,
		`{"y": 5, ` + irisFeatures + `}`,
		`{"y": "setosa", ` + irisFeatures + `}`,
		`{"y": "virginica", ` + irisFeatures + `}`,
		`{"prediction": {"old": 1}, ` + irisFeatures + `}`,
		`{"id": "b", "sepal_length_cm": "wide", "sepal_width_cm": 3.5, "petal_length_cm": 1.4, "petal_width_cm": 0.2}`,
	}
	in := make([][]byte, len(msgs))
	for i, m := range msgs {
		in[i] = []byte(m)
	}
	out := s.process(t, in...)
	checkErrored(t, out, map[int]string{
		4: `column "id": invalid character ']'`,
		9: `column "sepal_length_cm": a string where a number is expected`,
	})
	for i, g := range out {
		if g.err != nil {
			continue
		}
		o := g.object(t)
		if o["prediction"] == nil || o["model_id"] == nil {
			t.Errorf("message %d not scored: %s", i, g.content)
		}
		if n := strings.Count(string(g.content), `"prediction"`); n != 1 {
			t.Errorf("message %d has %d prediction members: %s", i, n, g.content)
		}
	}
	if o := out[3].object(t); fmt.Sprint(o["id"]) != "map[n:[1 <nil>]]" {
		t.Errorf("nested id changed: %s", out[3].content)
	}
	if _, ok := out[8].object(t)["prediction"].(map[string]any); ok {
		t.Errorf("old prediction kept: %s", out[8].content)
	}
}

// TestSelectKeepMajorityKind: a kept column, which forestd_select does
// read, takes the kind most of the batch's messages give it, so the one
// message with a string id among numeric ids is errored wherever it comes
// (first here), and the others are mapped; members neither the mapping
// nor keep names are not decoded.
func TestSelectKeepMajorityKind(t *testing.T) {
	s := startStream(t, 1, `forestd_select: {mapping: "examples/xor.fdm.json", keep: [id]}`)
	x := `"x3a_0": 0.5, "x3a_1": -1, "x3a_2": 2`
	out := s.process(t,
		[]byte(`{"id": "seven", `+x+`}`),
		[]byte(`{"id": 1, `+x+`, "junk": "a"}`),
		[]byte(`{"id": 2, `+x+`, "junk": [1]}`),
		[]byte(`{"id": 3, `+x+`, "junk": 4}`),
		[]byte(`{"id": true, `+x+`}`),
	)
	checkErrored(t, out, map[int]string{
		0: `column "id": a string where most values of the batch have a number`,
		4: `column "id": a bool where most values of the batch have a number`,
	})
	for i := 1; i <= 3; i++ {
		o := out[i].object(t)
		if fmt.Sprint(o["id"]) != fmt.Sprint(i) || o["fdm_g1_1"] == nil || o["junk"] != nil {
			t.Errorf("message %d: %s", i, out[i].content)
		}
	}
}

// TestTrainMajorityKind: forestd_train without features decodes every
// column, each of the kind most of the batch's messages give it: a batch
// of 100 whose first message alone has a string feature, or a numeric
// label among string labels, errors that message alone.
func TestTrainMajorityKind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.model")
	s := startStream(t, 1, fmt.Sprintf("forestd_train: {label: y, task: classification, window: 1000, min_rows: 1000, retrain_every: 1000, trees: 5, model_path: %q}", path))
	batch := func(first string) [][]byte {
		in := [][]byte{[]byte(first)}
		for i := 1; i < 100; i++ {
			in = append(in, []byte(fmt.Sprintf(`{"x1": %d, "x2": %d, "y": "%c"}`, i, i%7, 'a'+i%2)))
		}
		return in
	}
	out := s.process(t, batch(`{"x1": "oops", "x2": 1, "y": "a"}`)...)
	checkErrored(t, out, map[int]string{0: `column "x1": a string where most values of the batch have a number`})
	out = s.process(t, batch(`{"x1": 1, "x2": 1, "y": 5}`)...)
	checkErrored(t, out, map[int]string{0: `column "y": a number where most values of the batch have a string`})
}

// TestTrainFeaturesSkipOtherMembers: with features set, forestd_train
// reads only them and the label: a member it does not read may be of any
// kind, nested included, in any message; a wrong kind in a feature is
// still the odd message's error.
func TestTrainFeaturesSkipOtherMembers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.model")
	s := startStream(t, 1, fmt.Sprintf("forestd_train: {label: y, features: [x1, x2], task: classification, window: 1000, min_rows: 1000, retrain_every: 1000, trees: 5, model_path: %q}", path))
	in := [][]byte{
		[]byte(`{"x1": 1, "x2": 2, "y": "a", "meta": {"src": [1, 2]}}`),
		[]byte(`{"x1": 2, "x2": 3, "y": "b", "meta": "text"}`),
		[]byte(`{"x1": 3, "x2": 4, "y": "a", "meta": 7}`),
		[]byte(`{"x1": "oops", "x2": 5, "y": "b", "meta": null}`),
	}
	checkErrored(t, s.process(t, in...), map[int]string{3: `column "x1": a string where a number is expected`})
}

// TestScoreJSONKeepsText: a scored JSON message is its own bytes up to its
// closing brace, byte for byte (spacing, escapes, number texts, nested
// members), then the prediction members, at the root or under
// result_field; each message of the batch has its own.
func TestScoreJSONKeepsText(t *testing.T) {
	msgs := []string{
		`{ "id" : "\u00e9\"}" ,` + irisFeatures + ` , "n": 1.50e+0, "deep": {"a": [1, {"b": null}]} }`,
		"\t{\"id\":7,\n" + irisFeatures + "}\n",
		`{` + irisFeatures + `}`,
	}
	in := make([][]byte, len(msgs))
	for i, m := range msgs {
		in[i] = []byte(m)
	}
	for _, field := range []string{"", "forestd"} {
		s := startStream(t, 1, fmt.Sprintf(`forestd_score: {model: "examples/iris.model", result_field: %q}`, field))
		out := s.process(t, in...)
		for i, g := range out {
			if g.err != nil {
				t.Fatalf("message %d: %v", i, g.err)
			}
			orig := strings.TrimRight(msgs[i], " \t\n")
			head := orig[:len(orig)-1]
			tail, ok := strings.CutPrefix(string(g.content), head)
			if !ok {
				t.Fatalf("result_field %q, message %d: %q does not begin with %q", field, i, g.content, head)
			}
			want := `,"model_id":`
			if field != "" {
				want = `,"forestd":{"model_id":`
			}
			if !strings.HasPrefix(tail, want) || !strings.HasSuffix(tail, "}") {
				t.Fatalf("result_field %q, message %d: added %q", field, i, tail)
			}
			if o := g.object(t); o["id"] == nil && i < 2 {
				t.Fatalf("message %d: %v", i, o)
			}
		}
	}
}

// TestScoreJSONOneBuffer: the new bytes of a batch's scored JSON messages
// lie end to end in one buffer sized once, so a message holds no share of
// a buffer outgrown by the messages after it (a buffer grown by append
// kept the messages before each growth on the old array). The prediction
// members of the iris model (a 64-digit model_id, three probabilities) are
// longer than the guess of 24 bytes a column the buffer was sized by.
func TestScoreJSONOneBuffer(t *testing.T) {
	conf, err := scoreSpec().ParseYAML(`model: "examples/iris.model"`, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newScoreProc(conf, service.MockResources())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	batch := make(service.MessageBatch, 200)
	for i := range batch {
		// petals from setosa's to virginica's: probabilities of many digits
		batch[i] = service.NewMessage([]byte(fmt.Sprintf(`{"id":%d,"sepal_length_cm":6,"sepal_width_cm":3,"petal_length_cm":%g,"petal_width_cm":%g}`,
			i, 1+float64(i%60)/10, float64(i%25)/10)))
	}
	if _, err := p.ProcessBatch(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	var prev []byte
	for i, msg := range batch {
		if msg.GetError() != nil {
			t.Fatalf("message %d: %v", i, msg.GetError())
		}
		b, _ := msg.AsBytes()
		if !bytes.HasPrefix(b, []byte(fmt.Sprintf(`{"id":%d,`, i))) || !bytes.Contains(b, []byte(`"prob_`)) {
			t.Fatalf("message %d: %s", i, b)
		}
		if cap(b) != len(b) {
			t.Fatalf("message %d: %d bytes with room for %d", i, len(b), cap(b))
		}
		if i > 0 && unsafe.Pointer(unsafe.SliceData(b)) != unsafe.Add(unsafe.Pointer(unsafe.SliceData(prev)), len(prev)) {
			t.Fatalf("message %d does not follow message %d in the batch's buffer", i, i-1)
		}
		prev = b
	}
}

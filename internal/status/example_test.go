package status_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/forestd/forestd/internal/status"
	"github.com/forestd/forestd/scoring"
)

// Example serves the status page of a program's own pipeline: a Recorder
// told of the live model and a dead letter, its Handler mounted at the
// root of the program's mux, and the JSON the page polls read back.
func Example() {
	rec, err := status.New(status.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := scoring.Load("../../scoring/testdata/iris.model")
	if err != nil {
		fmt.Println(err)
		return
	}
	rec.ModelLive(m, "seed file iris.model")
	rec.DeadLetter("features", 0, 41, "score", "missing_column", "column petal_width_cm is missing")

	mux := http.NewServeMux()
	for _, p := range status.Patterns() {
		mux.Handle(p, rec.Handler())
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/api/status", nil))
	var s status.Status
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(w.Code, s.Model.Kind, s.Model.Version, len(s.Model.Classes), "classes,", s.Model.Origin)
	fmt.Println(s.DeadLetters.Total, "dead letter:", s.DeadLetters.Last[0].Reason)
	// Output:
	// 200 rf 1 3 classes, seed file iris.model
	// 1 dead letter: column petal_width_cm is missing
}

package report_test

import (
	"fmt"
	"strings"

	"github.com/forestd/forestd/internal/report"
)

// Example draws feature importances as an SVG bar chart, largest first,
// with every data string escaped: the chart a model report and the
// daemon's status page show.
func Example() {
	svg, err := report.Bars(report.BarChart{Title: "feature importances", Class: "importances", Bars: []report.Bar{
		{Label: "petal_width_cm", Value: 0.44}, {Label: "sepal_width_cm", Value: 0.02},
		{Label: "petal_length_cm", Value: 0.42}, {Label: "<b>sepal_length_cm</b>", Value: 0.12},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := string(svg)
	fmt.Println(strings.HasPrefix(s, "<svg"), strings.Count(s, `<rect class="bar"`), "bars")
	first := strings.Index(s, `data-label="petal_width_cm"`)
	last := strings.Index(s, `data-label="sepal_width_cm"`)
	fmt.Println("largest first:", first < last)
	fmt.Println("escaped:", !strings.Contains(s, "<b>") && strings.Contains(s, "&lt;b&gt;sepal_length_cm"))
	// Output:
	// true 4 bars
	// largest first: true
	// escaped: true
}

package schemas

import "testing"

// TestDriftReport: the columns in their documented order, α and the
// adjustment in the metadata.
func TestDriftReport(t *testing.T) {
	s := DriftReport(0.05, "holm")
	var names []string
	for _, f := range s.Fields() {
		names = append(names, f.Name)
	}
	want := []string{"test", "kind", "method", "statistic", "projected", "p_value", "p_adjusted", "drift", "rows", "perms"}
	if len(names) != len(want) {
		t.Fatalf("columns %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("columns %v, want %v", names, want)
		}
	}
	md := s.Metadata()
	if v, _ := md.GetValue("forestd.drift.alpha"); v != "0.05" {
		t.Errorf("alpha metadata %q", v)
	}
	if v, _ := md.GetValue("forestd.drift.adjust"); v != "holm" {
		t.Errorf("adjust metadata %q", v)
	}
}

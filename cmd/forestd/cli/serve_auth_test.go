package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/forestd/forestd/internal/broker"
)

// TestServeStartupFailsOneLine: a daemon that cannot start — the broker
// refuses its SASL password, or the seed model file is missing — exits 1
// with one error line, never a recovered panic.
func TestServeStartupFailsOneLine(t *testing.T) {
	b, err := broker.Start(broker.Options{Listen: "127.0.0.1:0",
		Users: []broker.User{{Mechanism: broker.MechanismScramSHA512, Name: "forestd", Password: "right"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	base := []string{"serve", "--brokers", b.Addr(), "--http", "127.0.0.1:0", "--log-level", "error", "--stages", "train"}
	cases := map[string][]string{
		`refused SASL SCRAM-SHA-512 authentication as "forestd"`: {"--sasl-mechanism", "SCRAM-SHA-512", "--sasl-username", "forestd", "--sasl-password", "n0t-the-pa55word"},
		"missing.model": {"--model", filepath.Join(t.TempDir(), "missing.model")},
	}
	for want, extra := range cases {
		code, _, errs := run(t, append(base, extra...)...)
		if code != ExitError || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "forestd serve: ") ||
			!strings.Contains(errs, want) || strings.Contains(errs, "internal error") || strings.Contains(errs, "pa55word") {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and one line naming %q", extra, code, errs, want)
		}
	}
}

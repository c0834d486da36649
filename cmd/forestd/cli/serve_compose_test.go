package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeComposeConfig: --stages with select listed before train
// composes them (the daemon package tests the rules), and --help documents
// the composition.
func TestServeComposeConfig(t *testing.T) {
	orders := map[string]bool{
		"select,train":         true,
		"select,analyze,train": true,
		"score,select,train":   true,
		"train,select":         false, // side by side, as before composition existed
		"train,score,select":   false,
		"select,score":         false,
		"analyze":              false,
		"score,train":          false,
	}
	for stages, want := range orders {
		cfg, _, err := serveConfigFromArgs([]string{"--stages", stages, "--brokers", "127.0.0.1:9"}, Env{})
		if err != nil {
			t.Errorf("%s: %v", stages, err)
			continue
		}
		if cfg.Composed() != want {
			t.Errorf("--stages %s: composed %v, want %v", stages, cfg.Composed(), want)
		}
	}
	code, _, errs := run(t, "serve", "--help")
	if code != ExitOK || !strings.Contains(errs, "Listing\nselect before train composes them") || !strings.Contains(errs, "in order: score, train, analyze, select") {
		t.Fatalf("serve --help does not document the composition (exit %d):\n%s", code, errs)
	}
}

// TestServeEmbeddedAuthConfig: the embedded broker's TLS and SASL flags
// override the config file's embedded section.
func TestServeEmbeddedAuthConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, []byte("embedded: {sasl_users: ['a:PLAIN']}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := serveConfigFromArgs([]string{"--config", p, "--embedded-tls-cert", "c.pem", "--embedded-tls-key", "k.pem",
		"--embedded-sasl-user", "b:scram-sha-256", "--embedded-sasl-user", "c:PLAIN", "--embedded-sasl-password-file", "pw"}, Env{})
	if err != nil {
		t.Fatal(err)
	}
	if e := cfg.Embedded; e.TLSCert != "c.pem" || e.TLSKey != "k.pem" || strings.Join(e.SASLUsers, ",") != "b:scram-sha-256,c:PLAIN" || e.SASLPasswordFile != "pw" {
		t.Fatalf("flags do not override the embedded section: %+v", e)
	}
	if _, _, err := serveConfigFromArgs([]string{"--embedded-sasl-user", "nomech"}, Env{}); err == nil {
		t.Fatal("--embedded-sasl-user without a mechanism accepted")
	}
}

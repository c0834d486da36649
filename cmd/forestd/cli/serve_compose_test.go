package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// composedConfig runs select → train → score on an embedded broker with
// TLS and SASL.
const composedConfig = `
stages: [select, train, score]
train: {label: y, window: 600, min_rows: 200, retrain_every: "600"}
embedded:
  listen: 127.0.0.1:0
  tls_cert: broker.pem
  tls_key: broker-key.pem
  sasl_users: ["forestd:SCRAM-SHA-512", "kcat:PLAIN"]
  sasl_password_file: passwords
`

// TestServeComposeConfig: select listed before train composes them; any
// other order, or either alone, does not; the composition is validated
// like the stages it joins and is documented in --help.
func TestServeComposeConfig(t *testing.T) {
	c, err := parseServeConfig(strings.NewReader(composedConfig), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if !c.composed() {
		t.Fatal("[select, train, score] does not compose")
	}
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
		if cfg.composed() != want {
			t.Errorf("--stages %s: composed %v, want %v", stages, cfg.composed(), want)
		}
	}
	invalid := map[string]string{
		"stages: [select, train]\ntrain: {label: ''}\n":        "train.label",
		"stages: [select, train, select]\n":                    "twice",
		"stages: [select, traine]\n":                           `unknown stage "traine"`,
		"stages: [select, train]\ntrain: {retrain_every: x}\n": "train.retrain_every",
	}
	wantConfigErrors(t, invalid)
	code, _, errs := run(t, "serve", "--help")
	if code != ExitOK || !strings.Contains(errs, "Listing\nselect before train composes them") || !strings.Contains(errs, "in order: score, train, analyze, select") {
		t.Fatalf("serve --help does not document the composition (exit %d):\n%s", code, errs)
	}
}

// TestServeEmbeddedAuthConfig: the embedded section takes TLS and SASL
// settings (from YAML or flags); kafka.tls and kafka.sasl still belong to
// external brokers, except the CA file and server name with which the
// daemon checks its own broker's certificate.
func TestServeEmbeddedAuthConfig(t *testing.T) {
	c, err := parseServeConfig(strings.NewReader(composedConfig), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := c.Embedded
	if e.TLSCert != "broker.pem" || e.TLSKey != "broker-key.pem" || len(e.SASLUsers) != 2 || e.SASLPasswordFile != "passwords" {
		t.Fatalf("embedded auth not read: %+v", e)
	}
	ok := []string{
		"embedded: {tls_cert: c.pem, tls_key: k.pem}\nkafka: {tls: {ca_file: ca.pem, server_name: broker.local}}\n",
		"embedded: {sasl_users: ['u:PLAIN']}\n",
		"brokers: [h:1]\nembedded: {tls_cert: c.pem}\n", // ignored with external brokers
	}
	for _, in := range ok {
		if _, err := checkConfig(in); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
	invalid := map[string]string{
		"embedded: {tls_cert: c.pem}\n":                                                            "embedded.tls_cert and embedded.tls_key must be given together",
		"embedded: {sasl_users: [alice]}\n":                                                        "embedded.sasl_users:",
		"embedded: {sasl_users: ['a:PLAIN', 'a:PLAIN']}\n":                                         `user "a" twice`,
		"embedded: {sasl_password_file: pw}\n":                                                     "embedded.sasl_password_file without embedded.sasl_users",
		"embedded: {sasl_users: ['a:PLAIN']}\nkafka: {sasl: {username: a}}\n":                      "kafka.sasl applies to external brokers",
		"kafka: {tls: {ca_file: ca.pem}}\n":                                                        "kafka.tls applies to external brokers",
		"embedded: {tls_cert: c.pem, tls_key: k.pem}\nkafka: {tls: {cert_file: c, key_file: k}}\n": "kafka.tls applies",
		"embedded: {sasl_pasword_file: pw}\n":                                                      "field sasl_pasword_file not found",
	}
	wantConfigErrors(t, invalid)
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

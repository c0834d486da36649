package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forestd/forestd/connectors/codec"
)

// The TLS + SASL tests: a self-signed certificate made here with
// crypto/x509, SCRAM-SHA-512 users, kcat as the outside client over
// SASL_SSL, and forestd serve either against `forestd broker --tls-cert
// --sasl-user` or with its embedded broker configured the same way.

const (
	daemonPassword = "daemon-s3cret"
	kcatPassword   = "kcat:pw with spaces" // colons and spaces survive the password file
)

// secureSetup writes a self-signed certificate for 127.0.0.1, its key and
// a SASL password file for the users forestd and kcat.
func secureSetup(t *testing.T) (dir, cert, key, passwords string) {
	t.Helper()
	dir = t.TempDir()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "forestd e2e broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, passwords = filepath.Join(dir, "broker.pem"), filepath.Join(dir, "broker-key.pem"), filepath.Join(dir, "passwords")
	files := map[string]string{
		cert:      string(pemBlock("CERTIFICATE", der)),
		key:       string(pemBlock("EC PRIVATE KEY", kb)),
		passwords: "# SASL users of the e2e broker\nforestd:" + daemonPassword + "\nkcat:" + kcatPassword + "\n",
	}
	for p, v := range files {
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, cert, key, passwords
}

// kcatSASL are kcat's settings for SASL_SSL as the user kcat.
func kcatSASL(cert string) []string {
	return []string{"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
		"-X", "sasl.username=kcat", "-X", "sasl.password=" + kcatPassword, "-X", "ssl.ca.location=" + cert}
}

// startSecureServe runs forestd serve with the config file and the
// daemon's password in $FORESTD_SASL_PASSWORD and returns once it has
// started (as startServe).
func startSecureServe(t *testing.T, config, password string, args ...string) *daemon {
	t.Helper()
	base := []string{"serve", "--config", config, "--http", "127.0.0.1:0", "--log-format", "json",
		"--session-timeout", "1500ms", "--commit-interval", "50ms", "--drain-timeout", "2s", "--partitions", "2"}
	p := startProcEnv(t, "serve", []string{"FORESTD_SASL_PASSWORD=" + password}, append(base, args...)...)
	d := &daemon{proc: p, ops: p.logField("ops endpoint listening", "addr", 30*time.Second)}
	p.logField("forestd serve started", "group", 30*time.Second)
	return d
}

// checkSecureScoring produces 20 rows with kcat over SASL_SSL and reads
// their predictions back the same way.
func checkSecureScoring(t *testing.T, brokers, cert string, version int64) {
	t.Helper()
	var rows []string
	for id := 0; id < 20; id++ {
		rows = append(rows, fmt.Sprintf(`{"id": %d, "f0": %g, "f1": %g, "f2": %g}`, id,
			float64((id*3)%17)/4, float64((id*4)%17)/4, float64((id*5)%17)/4))
	}
	kcatProduceX(t, brokers, featuresTopic, kcatSASL(cert), []string{"content-type=" + codec.ContentTypeNDJSON},
		[]byte(strings.Join(rows[:10], "\n")+"\n"), []byte(strings.Join(rows[10:], "\n")+"\n"))
	deadline := time.Now().Add(60 * time.Second)
	for {
		ps := predictionsJSON(t, kcatConsumeX(t, brokers, "forestd.predictions", kcatSASL(cert)))
		if len(ps) >= 20 {
			if len(ps) != 20 {
				t.Fatalf("%d predictions for 20 rows", len(ps))
			}
			seen := map[int]bool{}
			for _, p := range ps {
				if p.ModelVersion != version || seen[int(p.ID)] || p.ID < 0 || p.ID >= 20 {
					t.Fatalf("prediction %+v (model version %d wanted, ids 0..19 once)", p, version)
				}
				seen[int(p.ID)] = true
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 20 predictions over SASL_SSL after 60s", len(ps))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestServeBrokerTLSSASL: forestd broker with --tls-cert/--tls-key and
// SCRAM-SHA-512 users from a password file; forestd serve --brokers with
// kafka.tls and kafka.sasl in its config (the password from the
// environment) scores rows that kcat produces over SASL_SSL, and kcat reads
// the predictions back over SASL_SSL.
func TestServeBrokerTLSSASL(t *testing.T) {
	t.Parallel()
	needKcat(t)
	dir, cert, key, passwords := secureSetup(t)
	b := startProc(t, "broker", "broker", "--listen", freePort(t), "--data-dir", t.TempDir(), "--log-format", "json",
		"--tls-cert", cert, "--tls-key", key, "--sasl-user", "forestd:SCRAM-SHA-512", "--sasl-user", "kcat:scram-sha-512",
		"--sasl-password-file", passwords)
	brokers := b.logField("broker listening", "addr", 20*time.Second)
	if users := b.logField("broker listening", "sasl_users", time.Second); users != "forestd:SCRAM-SHA-512,kcat:SCRAM-SHA-512" {
		t.Fatalf("broker users %q", users)
	}
	model, version := trainSyntheticModel(t, 3, 10)
	config := filepath.Join(dir, "serve.yaml")
	yaml := fmt.Sprintf("brokers: [%s]\nstages: [score]\nmodel: %s\nkey: id\noutput_format: json\n"+
		"kafka:\n  tls: {enabled: true, ca_file: %s}\n  sasl: {mechanism: SCRAM-SHA-512, username: forestd}\n", brokers, model, cert)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startSecureServe(t, config, daemonPassword)
	d.waitReady(60 * time.Second)
	checkSecureScoring(t, brokers, cert, version)
	// without TLS and SASL, kcat is turned away
	out, err := runKcat(t, 10*time.Second, "-b", brokers, "-L", "-m", "3")
	if err == nil {
		t.Fatalf("kcat without TLS and SASL listed the broker's metadata:\n%s", out)
	}
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM", code)
	}
}

// TestServeBrokerWrongPassword: a daemon whose SASL password the broker
// refuses stops by itself with a non-zero exit and one clear error line
// (its other output is JSON log lines), without a panic.
func TestServeBrokerWrongPassword(t *testing.T) {
	t.Parallel()
	dir, cert, key, passwords := secureSetup(t)
	b := startProc(t, "broker", "broker", "--listen", freePort(t), "--log-format", "json",
		"--tls-cert", cert, "--tls-key", key, "--sasl-user", "forestd:SCRAM-SHA-512", "--sasl-password-file", passwords)
	brokers := b.logField("broker listening", "addr", 20*time.Second)
	config := filepath.Join(dir, "serve.yaml")
	yaml := fmt.Sprintf("brokers: [%s]\nstages: [train]\nkafka:\n  tls: {ca_file: %s}\n  sasl: {mechanism: SCRAM-SHA-512, username: forestd}\n", brokers, cert)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProcEnv(t, "serve", []string{"FORESTD_SASL_PASSWORD=wrong-" + daemonPassword}, "serve", "--config", config,
		"--http", "127.0.0.1:0", "--log-format", "json")
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the daemon did not stop by itself after the broker refused its password")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	var plain []string
	for _, line := range strings.Split(strings.TrimSpace(p.Log()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			plain = append(plain, line)
		}
	}
	log := p.Log()
	if len(plain) != 1 || !strings.HasPrefix(plain[0], "forestd serve: ") ||
		!strings.Contains(plain[0], `refused SASL SCRAM-SHA-512 authentication as "forestd"`) {
		t.Fatalf("want one error line naming the refused SASL authentication, got %q", plain)
	}
	if strings.Contains(log, "panic") || strings.Contains(log, "goroutine ") || strings.Contains(log, daemonPassword) {
		t.Fatalf("output shows a panic or the password:\n%s", log)
	}
}

// TestServeEmbeddedTLSSASL: forestd serve without --brokers runs its
// embedded broker with TLS and SASL users (embedded section of the
// config) and connects to it with matching settings; kcat reaches the same
// broker over SASL_SSL.
func TestServeEmbeddedTLSSASL(t *testing.T) {
	t.Parallel()
	needKcat(t)
	dir, cert, key, passwords := secureSetup(t)
	model, version := trainSyntheticModel(t, 3, 10)
	listen := freePort(t)
	config := filepath.Join(dir, "serve.yaml")
	yaml := fmt.Sprintf("stages: [score]\nmodel: %s\nkey: id\noutput_format: json\nembedded:\n  listen: %s\n"+
		"  tls_cert: %s\n  tls_key: %s\n  sasl_users: ['forestd:SCRAM-SHA-512', 'kcat:SCRAM-SHA-512']\n  sasl_password_file: %s\n",
		model, listen, cert, key, passwords)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startSecureServe(t, config, "") // the password file serves both users
	if v := d.logField("embedded broker listening", "tls", 30*time.Second); v != "true" {
		t.Fatalf("embedded broker tls=%s", v)
	}
	d.waitReady(60 * time.Second)
	checkSecureScoring(t, listen, cert, version)
	if code := d.stop(20 * time.Second); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM", code)
	}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// runKcat runs kcat with a timeout and returns its combined output.
func runKcat(t *testing.T, d time.Duration, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	out, err := exec.CommandContext(ctx, kcatPath, args...).CombinedOutput()
	return string(out), err
}

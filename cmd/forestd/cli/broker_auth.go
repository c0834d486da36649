package cli

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/forestd/forestd/connectors/broker"
	"github.com/forestd/forestd/connectors/kafka"
)

// saslPasswordEnv holds the SASL password of forestd serve's Kafka client
// and, for a broker without a password file, of every SASL user it
// defines.
const saslPasswordEnv = "FORESTD_SASL_PASSWORD"

// maxPasswordFileBytes bounds a SASL password file.
const maxPasswordFileBytes = 1 << 20

// brokerAuth is the TLS and SASL setup of forestd's own broker: the flags
// of `forestd broker` and the embedded section of `forestd serve`.
// Passwords never come from the command line: they are read from
// PasswordFile (lines NAME:PASSWORD) or, without one, from
// $FORESTD_SASL_PASSWORD for every user.
type brokerAuth struct {
	// TLSCert and TLSKey are PEM files: a certificate (chain) and its key.
	// Both set: the broker accepts TLS only.
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
	// SASLUsers are NAME:MECHANISM (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512);
	// any: the broker requires SASL authentication as one of them.
	SASLUsers []string `yaml:"sasl_users"`
	// SASLPasswordFile holds one NAME:PASSWORD line per user ('#' starts a
	// comment line).
	SASLPasswordFile string `yaml:"sasl_password_file"`
}

func (a brokerAuth) tls() bool  { return a.TLSCert != "" }
func (a brokerAuth) sasl() bool { return len(a.SASLUsers) > 0 }

// authNames name brokerAuth's settings in error messages: config keys
// or flags.
type authNames struct{ cert, key, users, passwords string }

var (
	authKeys  = authNames{"embedded.tls_cert", "embedded.tls_key", "embedded.sasl_users", "embedded.sasl_password_file"}
	authFlags = authNames{"--tls-cert", "--tls-key", "--sasl-user", "--sasl-password-file"}
)

// validate checks the setup without reading files: certificate and key
// together, well-formed and distinct users, a password file only with
// users.
func (a brokerAuth) validate(n authNames) error {
	if (a.TLSCert == "") != (a.TLSKey == "") {
		return fmt.Errorf("%s and %s must be given together", n.cert, n.key)
	}
	seen := map[string]bool{}
	for _, u := range a.SASLUsers {
		name, _, err := parseSASLUser(u)
		if err != nil {
			return fmt.Errorf("%s: %w", n.users, err)
		}
		if seen[name] {
			return fmt.Errorf("%s: user %q twice", n.users, name)
		}
		seen[name] = true
	}
	if a.SASLPasswordFile != "" && !a.sasl() {
		return fmt.Errorf("%s without %s", n.passwords, n.users)
	}
	return nil
}

// parseSASLUser splits NAME:MECHANISM; the mechanism is case-insensitive.
func parseSASLUser(s string) (name, mech string, err error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return "", "", fmt.Errorf("%q is not NAME:MECHANISM", s)
	}
	name, mech = s[:i], strings.ToUpper(s[i+1:])
	if strings.ContainsAny(name, ":\n\r") || strings.TrimSpace(name) != name {
		return "", "", fmt.Errorf("user name %q: no colon, line break or surrounding space", name)
	}
	switch mech {
	case broker.MechanismPlain, broker.MechanismScramSHA256, broker.MechanismScramSHA512:
	default:
		return "", "", fmt.Errorf("user %q: mechanism %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", name, mech)
	}
	return name, mech, nil
}

// parsePasswordFile reads NAME:PASSWORD lines. Blank lines and lines whose
// first character is '#' are skipped; the password is everything after the
// first colon (a trailing CR is dropped); a name twice, an empty name or
// password, or a line without a colon is an error naming the line number
// (never the password).
func parsePasswordFile(r io.Reader) (map[string]string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxPasswordFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxPasswordFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxPasswordFileBytes)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxPasswordFileBytes+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || line[0] == '#' {
			continue
		}
		name, pw, ok := strings.Cut(line, ":")
		switch {
		case !ok:
			return nil, fmt.Errorf("line %d is not NAME:PASSWORD", n)
		case name == "" || pw == "":
			return nil, fmt.Errorf("line %d: empty name or password", n)
		case out[name] != "":
			return nil, fmt.Errorf("line %d: user %q twice", n, name)
		}
		out[name] = pw
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// resolve reads the certificate, the key and the passwords: the broker's
// TLS config (nil without TLS) and SASL users, in SASLUsers order.
func (a brokerAuth) resolve(getenv func(string) string) (*tls.Config, []broker.User, error) {
	if err := a.validate(authKeys); err != nil {
		return nil, nil, err
	}
	var tc *tls.Config
	if a.tls() {
		cert, err := tls.LoadX509KeyPair(a.TLSCert, a.TLSKey)
		if err != nil {
			return nil, nil, fmt.Errorf("TLS certificate %s and key %s: %w", a.TLSCert, a.TLSKey, err)
		}
		tc = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if !a.sasl() {
		return tc, nil, nil
	}
	var pws map[string]string
	if a.SASLPasswordFile != "" {
		fh, err := os.Open(a.SASLPasswordFile)
		if err != nil {
			return nil, nil, fmt.Errorf("SASL password file: %w", err)
		}
		pws, err = parsePasswordFile(fh)
		fh.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("SASL password file %s: %w", a.SASLPasswordFile, err)
		}
	}
	users := make([]broker.User, 0, len(a.SASLUsers))
	for _, u := range a.SASLUsers {
		name, mech, _ := parseSASLUser(u)
		pw := getenv(saslPasswordEnv)
		if pws != nil {
			pw = pws[name]
		}
		if pw == "" {
			if pws != nil {
				return nil, nil, fmt.Errorf("SASL user %q has no password in %s", name, a.SASLPasswordFile)
			}
			return nil, nil, fmt.Errorf("SASL user %q has no password: give a password file or set $%s", name, saslPasswordEnv)
		}
		users = append(users, broker.User{Mechanism: mech, Name: name, Password: pw})
	}
	return tc, users, nil
}

// clientFor returns the client settings that reach a broker set up with
// a: TLS trusting the broker's own certificate (unless ca names another
// CA file) and SASL as the first user.
func (a brokerAuth) clientFor(users []broker.User, ca, serverName string) (kafka.TLSOptions, kafka.SASLOptions, error) {
	var t kafka.TLSOptions
	if a.tls() {
		if ca == "" {
			ca = a.TLSCert
		}
		t = kafka.TLSOptions{Enabled: true, CAFile: ca, ServerName: serverName}
	}
	var s kafka.SASLOptions
	if a.sasl() {
		if len(users) == 0 {
			return t, s, errors.New("SASL without users")
		}
		s = kafka.SASLOptions{Mechanism: users[0].Mechanism, Username: users[0].Name, Password: users[0].Password}
	}
	return t, s, nil
}

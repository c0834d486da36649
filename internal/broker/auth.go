package broker

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"strings"
)

// PasswordEnv holds the SASL password of forestd serve's Kafka client and,
// for a broker without a password file, of every SASL user it defines.
const PasswordEnv = "FORESTD_SASL_PASSWORD"

// maxPasswordFileBytes bounds a SASL password file.
const maxPasswordFileBytes = 1 << 20

// Auth is the TLS and SASL setup of forestd's own broker from files: the
// flags of `forestd broker` and the embedded section of the daemon's
// configuration.
// Passwords never come from the command line: they are read from
// PasswordFile (lines NAME:PASSWORD) or, without one, from
// $FORESTD_SASL_PASSWORD for every user.
type Auth struct {
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

// TLS reports whether the broker accepts TLS only.
func (a Auth) TLS() bool { return a.TLSCert != "" }

// SASL reports whether the broker requires SASL authentication.
func (a Auth) SASL() bool { return len(a.SASLUsers) > 0 }

// AuthNames name Auth's settings in error messages: config keys or flags.
type AuthNames struct{ Cert, Key, Users, Passwords string }

// authKeys are the YAML keys of Auth.
var authKeys = AuthNames{"tls_cert", "tls_key", "sasl_users", "sasl_password_file"}

// Validate checks the setup without reading files: certificate and key
// together, well-formed and distinct users, a password file only with
// users.
func (a Auth) Validate(n AuthNames) error {
	if (a.TLSCert == "") != (a.TLSKey == "") {
		return fmt.Errorf("%s and %s must be given together", n.Cert, n.Key)
	}
	seen := map[string]bool{}
	for _, u := range a.SASLUsers {
		name, _, err := parseSASLUser(u)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Users, err)
		}
		if seen[name] {
			return fmt.Errorf("%s: user %q twice", n.Users, name)
		}
		seen[name] = true
	}
	if a.SASLPasswordFile != "" && !a.SASL() {
		return fmt.Errorf("%s without %s", n.Passwords, n.Users)
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
	case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
	default:
		return "", "", fmt.Errorf("user %q: mechanism %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", name, mech)
	}
	return name, mech, nil
}

// ParsePasswordFile reads NAME:PASSWORD lines. Blank lines and lines whose
// first character is '#' are skipped; the password is everything after the
// first colon (a trailing CR is dropped); a name twice, an empty name or
// password, or a line without a colon is an error naming the line number
// (never the password).
func ParsePasswordFile(r io.Reader) (map[string]string, error) {
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

// Resolve reads the certificate, the key and the passwords: the broker's
// TLS config (nil without TLS) and SASL users, in SASLUsers order.
func (a Auth) Resolve(getenv func(string) string) (*tls.Config, []User, error) {
	if err := a.Validate(authKeys); err != nil {
		return nil, nil, err
	}
	var tc *tls.Config
	if a.TLS() {
		cert, err := tls.LoadX509KeyPair(a.TLSCert, a.TLSKey)
		if err != nil {
			return nil, nil, fmt.Errorf("TLS certificate %s and key %s: %w", a.TLSCert, a.TLSKey, err)
		}
		tc = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if !a.SASL() {
		return tc, nil, nil
	}
	var pws map[string]string
	if a.SASLPasswordFile != "" {
		fh, err := os.Open(a.SASLPasswordFile)
		if err != nil {
			return nil, nil, fmt.Errorf("SASL password file: %w", err)
		}
		pws, err = ParsePasswordFile(fh)
		fh.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("SASL password file %s: %w", a.SASLPasswordFile, err)
		}
	}
	users := make([]User, 0, len(a.SASLUsers))
	for _, u := range a.SASLUsers {
		name, mech, _ := parseSASLUser(u)
		pw := getenv(PasswordEnv)
		if pws != nil {
			pw = pws[name]
		}
		if pw == "" {
			if pws != nil {
				return nil, nil, fmt.Errorf("SASL user %q has no password in %s", name, a.SASLPasswordFile)
			}
			return nil, nil, fmt.Errorf("SASL user %q has no password: give a password file or set $%s", name, PasswordEnv)
		}
		users = append(users, User{Mechanism: mech, Name: name, Password: pw})
	}
	return tc, users, nil
}

package codec

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonScanner reads the flat JSON objects JSONRows takes, by hand: the
// token-by-token encoding/json.Decoder cost about 100 µs per 50-feature
// row, most of a JSON batch's time (BenchmarkScoreJSONBatch in
// connectors/benthos); numbers are valued as they are scanned (float),
// since strconv.ParseFloat on their text took a third of what remained
// (BenchmarkJSONRows). It follows the JSON grammar (RFC 8259) for what it
// accepts; strings with escapes are decoded by encoding/json, so their
// values are encoding/json's, but a string value that is not Unicode text
// is refused where encoding/json would write U+FFFD (str).
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) eof() bool  { return s.i >= len(s.b) }
func (s *jsonScanner) peek() byte { return s.b[s.i] }

func (s *jsonScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// invalid is the error for the byte at s.i (or the end).
func (s *jsonScanner) invalid(context string) error {
	if s.eof() {
		return fmt.Errorf("unexpected EOF")
	}
	return fmt.Errorf("invalid character %q %s", rune(s.b[s.i]), context)
}

// valueKind names the value starting at s.i for "expected an object"
// errors ("" when no value starts there).
func (s *jsonScanner) valueKind() string {
	switch c := s.b[s.i]; {
	case c == '[':
		return `"["`
	case c == '"':
		return "a string"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	case s.literal("true") || s.literal("false"):
		return "a boolean"
	case s.literal("null"):
		return "null"
	}
	return ""
}

func (s *jsonScanner) literal(lit string) bool {
	return len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit
}

// str reads a string (s.i at its opening quote) and returns its value.
// With strict (a value that becomes a utf8 cell) a string that is not
// Unicode text — invalid UTF-8, or an escaped lone surrogate — is an
// error: encoding/json would replace it with U+FFFD, so a key column
// would no longer hold the message's key, and an Arrow utf8 column holds
// UTF-8 only (RFC 8259 §8.1: JSON text is UTF-8). Otherwise (keys,
// skipped values) its value is encoding/json's.
func (s *jsonScanner) str(strict bool) ([]byte, error) {
	start := s.i
	s.i++
	plain, ascii := true, true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			raw := s.b[start+1 : s.i-1]
			if plain && ascii {
				return raw, nil
			}
			valid := ascii || utf8.Valid(raw)
			if plain && valid {
				return raw, nil
			}
			if strict && !valid {
				return nil, notUTF8(raw)
			}
			var v string // escapes or invalid UTF-8: encoding/json's reading
			if err := json.Unmarshal(s.b[start:s.i], &v); err != nil {
				return nil, err
			}
			if strict && strings.Contains(v, "\uFFFD") {
				if err := loneSurrogate(raw); err != nil {
					return nil, err
				}
			}
			return []byte(v), nil
		case c == '\\':
			plain = false
			s.i += 2
		case c < 0x20:
			return nil, fmt.Errorf("invalid character %q in string literal", rune(c))
		default:
			ascii = ascii && c < utf8.RuneSelf
			s.i++
		}
	}
	return nil, fmt.Errorf("unexpected EOF")
}

// notUTF8 is str's error for raw, a string's bytes that are not UTF-8:
// it gives the offset and bytes of the first invalid sequence.
func notUTF8(raw []byte) error {
	at := 0
	for at < len(raw) {
		r, n := utf8.DecodeRune(raw[at:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		at += n
	}
	return fmt.Errorf("string is not valid UTF-8 (byte %#x at offset %d of the string); strings are kept byte for byte and must be UTF-8", raw[at], at)
}

// loneSurrogate reports, as str's error, a \uXXXX escape in raw (a
// string's bytes, escapes valid) of a UTF-16 surrogate that is not one
// half of a pair, which encoding/json decodes to U+FFFD.
func loneSurrogate(raw []byte) error {
	hex := func(i int) rune { // the code unit of the escape at raw[i:] ("\\uXXXX"), or -1
		if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
			return -1
		}
		v, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
		if err != nil {
			return -1
		}
		return rune(v)
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		u := hex(i)
		if u < 0 {
			i++ // a one-character escape
			continue
		}
		if utf16.IsSurrogate(u) {
			if u >= 0xdc00 || utf16.DecodeRune(u, hex(i+6)) == utf8.RuneError {
				return fmt.Errorf("string escapes a lone UTF-16 surrogate (\\u%04x at offset %d of the string), which is not Unicode text", u, i)
			}
			i += 6 // the pair's low half
		}
		i += 5
	}
	return nil
}

// number reads a number (RFC 8259 §6) and returns its text.
func (s *jsonScanner) number() ([]byte, error) {
	start := s.i
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return nil, s.invalid("in numeric literal")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return nil, s.invalid("after decimal point in numeric literal")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return nil, s.invalid("in exponent of numeric literal")
		}
	}
	return s.b[start:s.i], nil
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// float reads a number (RFC 8259 §6) as number does, computing its value
// in the same pass when that is exact: a decimal of at most 15 significant
// digits whose decimal exponent is within ±22 is an exactly representable
// integer times or divided by an exactly representable power of ten, so
// one IEEE operation rounds it correctly (Clinger's fast path, the first
// one strconv.ParseFloat tries). For any other number it returns the
// number's text instead, for strconv.ParseFloat (nil: the value is f).
func (s *jsonScanner) float() (f float64, text []byte, err error) {
	b, start := s.b, s.i
	i := s.i
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	var mant uint64
	nd, exp := 0, 0 // significant digits in mant; decimal exponent
	if i < len(b) && b[i] == '0' {
		i++
	} else {
		d := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			mant = mant*10 + uint64(b[i]-'0')
		}
		if i == d {
			s.i = i
			return 0, nil, s.invalid("in numeric literal")
		}
		nd = i - d
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if mant == 0 && b[i] == '0' {
				exp-- // a leading zero: not significant
				continue
			}
			mant = mant*10 + uint64(b[i]-'0')
			nd++
			exp--
		}
		if i == d {
			s.i = i
			return 0, nil, s.invalid("after decimal point in numeric literal")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		d, e := i, 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if e < 10000 {
				e = e*10 + int(b[i]-'0')
			}
		}
		if i == d {
			s.i = i
			return 0, nil, s.invalid("in exponent of numeric literal")
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	s.i = i
	switch {
	case mant == 0 && nd <= 19:
		f = 0 // zero whatever the exponent (more than 19 digits could have wrapped mant to 0)
	case nd > 15 || exp < -22 || exp > 22:
		return 0, b[start:i], nil // not exact in one step
	case exp < 0:
		f = float64(mant) / pow10[-exp]
	default:
		f = float64(mant) * pow10[exp]
	}
	if neg {
		f = -f
	}
	return f, nil, nil
}

// value reads the value of column c at builder row at.
func (s *jsonScanner) value(c *jsonColumn, at, row int) error {
	if s.eof() {
		return fmt.Errorf("JSON row %d, column %q: unexpected EOF", row, c.name)
	}
	switch ch := s.peek(); {
	case ch == '"':
		v, err := s.str(true)
		if err != nil {
			return fmt.Errorf("JSON row %d, column %q: %w", row, c.name, err)
		}
		if c.ghost {
			v = nil // checked, not kept: no string to allocate
		}
		return c.add(KindString, 0, string(v), false, at, row)
	case ch == '-' || ch >= '0' && ch <= '9':
		f, t, err := s.float()
		if err != nil {
			return fmt.Errorf("JSON row %d, column %q: %w", row, c.name, err)
		}
		if t != nil {
			if f, err = strconv.ParseFloat(string(t), 64); err != nil {
				return fmt.Errorf("JSON row %d, column %q: number %s out of range", row, c.name, t)
			}
		}
		return c.add(KindNumber, f, "", false, at, row)
	case ch == '{' || ch == '[':
		return fmt.Errorf("JSON row %d, column %q: nested objects and arrays are not supported (one flat object per row)", row, c.name)
	case s.literal("true"):
		s.i += 4
		return c.add(KindBool, 0, "", true, at, row)
	case s.literal("false"):
		s.i += 5
		return c.add(KindBool, 0, "", false, at, row)
	case s.literal("null"):
		s.i += 4
		return c.add(KindNull, 0, "", false, at, row)
	}
	return fmt.Errorf("JSON row %d, column %q: %w", row, c.name, s.invalid("looking for beginning of value"))
}

// maxSkipDepth bounds the nesting of a skipped value, as encoding/json
// bounds a decoded one.
const maxSkipDepth = 10000

// skip reads and validates a value of any kind, nested objects and arrays
// included, at nesting depth depth (0 for a member of a row's object).
func (s *jsonScanner) skip(depth int) error {
	if s.eof() {
		return fmt.Errorf("unexpected EOF")
	}
	switch ch := s.peek(); {
	case ch == '"':
		_, err := s.str(false)
		return err
	case ch == '-' || ch >= '0' && ch <= '9':
		_, err := s.number()
		return err
	case ch == '{' || ch == '[':
		if depth == maxSkipDepth {
			return fmt.Errorf("exceeded max depth")
		}
		return s.skipContainer(depth + 1)
	case s.literal("true"), s.literal("null"):
		s.i += 4
		return nil
	case s.literal("false"):
		s.i += 5
		return nil
	}
	return s.invalid("looking for beginning of value")
}

// skipContainer reads an object or array (s.i at its '{' or '[') whose
// members are at nesting depth depth.
func (s *jsonScanner) skipContainer(depth int) error {
	obj := s.peek() == '{'
	end := byte(']')
	if obj {
		end = '}'
	}
	s.i++
	s.space()
	if !s.eof() && s.peek() == end {
		s.i++
		return nil
	}
	for {
		s.space()
		if obj {
			if s.eof() {
				return fmt.Errorf("unexpected EOF")
			}
			if s.peek() != '"' {
				return s.invalid("looking for beginning of object key string")
			}
			if _, err := s.str(false); err != nil {
				return err
			}
			s.space()
			if s.eof() {
				return fmt.Errorf("unexpected EOF")
			}
			if s.peek() != ':' {
				return s.invalid("after object key")
			}
			s.i++
			s.space()
		}
		if err := s.skip(depth); err != nil {
			return err
		}
		s.space()
		if s.eof() {
			return fmt.Errorf("unexpected EOF")
		}
		switch s.peek() {
		case ',':
			s.i++
		case end:
			s.i++
			return nil
		default:
			if obj {
				return s.invalid("after object key:value pair")
			}
			return s.invalid("after array element")
		}
	}
}

// kind reads a value and returns its kind, for JSONRows.AppendAll's vote;
// a nested object or array is an error, as in a decoded column.
func (s *jsonScanner) kind() (Kind, error) {
	if s.eof() {
		return 0, fmt.Errorf("unexpected EOF")
	}
	switch ch := s.peek(); {
	case ch == '"':
		_, err := s.str(false)
		return KindString, err
	case ch == '-' || ch >= '0' && ch <= '9':
		_, err := s.number()
		return KindNumber, err
	case s.literal("true"):
		s.i += 4
		return KindBool, nil
	case s.literal("false"):
		s.i += 5
		return KindBool, nil
	case s.literal("null"):
		s.i += 4
		return KindNull, nil
	}
	return 0, s.invalid("looking for beginning of value")
}

package sfgen

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// An Encoding is a short string form of an ID, spelled the same by Go and
// by the SQL that sfgen renders (snowflake_format and snowflake_parse,
// from SQL release 8). Decimal stays the form of String, MarshalText and
// MarshalJSON.
type Encoding uint8

const (
	// Base32 is Crockford's base32 in a fixed 13 characters
	// ("0000000000000" to "7ZZZZZZZZZZZZ"), so that the strings sort as
	// the IDs do. Its alphabet is 0-9 and A-Z without I, L, O and U;
	// parsing ignores case and reads I and L as 1, O as 0.
	Base32 Encoding = iota + 1
	// Base58 is Bitcoin's alphabet (1-9, A-Z and a-z without 0, I, O and
	// l: URL-safe, no look-alikes), 1 to 11 characters, no leading "1"
	// (the zero digit) but for the ID 0 itself, so that each ID has one
	// spelling. Its strings do not sort as the IDs do.
	Base58
)

// Encodings are the encodings sfgen knows, in order.
var Encodings = []Encoding{Base32, Base58}

const (
	base32Digits = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	base58Digits = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
	base32Len    = 13
	base58MaxLen = 11
	// shownChars is the longest input an EncodingError quotes whole; a
	// longer one is given by its length.
	shownChars = 32
)

// ErrUnknownEncoding is wrapped by the error of ParseEncoding, and of
// Encode and Decode given an Encoding that is not one of Encodings.
var ErrUnknownEncoding = errors.New("unknown ID encoding")

// String returns "base32" or "base58".
func (e Encoding) String() string {
	switch e {
	case Base32:
		return "base32"
	case Base58:
		return "base58"
	}
	return fmt.Sprintf("Encoding(%d)", uint8(e))
}

// ParseEncoding returns the Encoding named s: "base32" or "base58".
func ParseEncoding(s string) (Encoding, error) {
	for _, e := range Encodings {
		if s == e.String() {
			return e, nil
		}
	}
	return 0, unknownEncoding(quote(s))
}

func unknownEncoding(name string) error {
	return fmt.Errorf("%w %s: want base32 or base58", ErrUnknownEncoding, name)
}

// Base32 returns the ID in Crockford's base32, 13 characters, such as
// "0000003X04400" for 4194439168. A negative value, which is never an
// ID, returns "" (Encode returns a *RangeError for it).
func (id ID) Base32() string {
	if id < 0 {
		return ""
	}
	var b [base32Len]byte
	n := uint64(id)
	for i := base32Len - 1; i >= 0; i-- {
		b[i] = base32Digits[n&31]
		n >>= 5
	}
	return string(b[:])
}

// Base58 returns the ID in base58, such as "7Pebdh" for 4194439168. A
// negative value, which is never an ID, returns "" (Encode returns a
// *RangeError for it).
func (id ID) Base58() string {
	if id < 0 {
		return ""
	}
	var b [base58MaxLen]byte
	i := len(b)
	n := uint64(id)
	for {
		i--
		b[i] = base58Digits[n%58]
		n /= 58
		if n == 0 {
			return string(b[i:])
		}
	}
}

// Encode returns the ID in encoding e. A negative value returns a
// *RangeError for FieldID; an unknown e an error wrapping
// ErrUnknownEncoding.
func (id ID) Encode(e Encoding) (string, error) {
	if id < 0 {
		return "", idRangeError(int64(id))
	}
	switch e {
	case Base32:
		return id.Base32(), nil
	case Base58:
		return id.Base58(), nil
	}
	return "", unknownEncoding(e.String())
}

// Decode parses s in encoding e, as ParseBase32 or ParseBase58 does.
func Decode(s string, e Encoding) (ID, error) {
	switch e {
	case Base32:
		return ParseBase32(s)
	case Base58:
		return ParseBase58(s)
	}
	return 0, unknownEncoding(e.String())
}

// ParseBase32 parses an ID in Crockford's base32: exactly 13 characters
// of 0-9 and A-Z but U, in any case, where I and L read as 1 and O as 0,
// up to "7ZZZZZZZZZZZZ". Anything else returns an *EncodingError.
func ParseBase32(s string) (ID, error) {
	if utf8.RuneCountInString(s) != base32Len {
		return 0, encodingError(Base32, s, "want 13 characters")
	}
	var n uint64
	first, i := -1, 0
	for _, r := range s {
		d := base32Digit(r)
		if d < 0 {
			return 0, encodingError(Base32, s, fmt.Sprintf("%s at character %d is not in Crockford's base32 alphabet (0-9 and A-Z but U, in any case; I and L read as 1, O as 0)", quote(string(r)), i+1))
		}
		if first < 0 {
			first = d
		}
		n = n<<5 | uint64(d)
		i++
	}
	// 13 characters hold 65 bits: the first may be 0 to 7 only (n
	// dropped the bits above when it was larger).
	if first > 7 {
		return 0, encodingError(Base32, s, `above "7ZZZZZZZZZZZZ", the largest ID`)
	}
	return ID(n), nil
}

// base32Digit is r's value in Crockford's base32, -1 if it has none.
func base32Digit(r rune) int {
	switch {
	case r >= 'a' && r <= 'z':
		r -= 'a' - 'A'
	}
	switch r {
	case 'I', 'L':
		return 1
	case 'O':
		return 0
	}
	if r >= utf8.RuneSelf {
		return -1
	}
	return strings.IndexByte(base32Digits, byte(r))
}

// ParseBase58 parses an ID in base58: 1 to 11 characters of Bitcoin's
// alphabet (case matters), without a leading "1" but for "1" itself (the
// ID 0), up to "NQm6nKp8qFC". Anything else returns an *EncodingError.
func ParseBase58(s string) (ID, error) {
	if n := utf8.RuneCountInString(s); n < 1 || n > base58MaxLen {
		return 0, encodingError(Base58, s, "want 1 to 11 characters")
	}
	// One pass; the errors in Go's (and the SQL's) order: a character
	// outside the alphabet, then a leading zero digit, then the range.
	var n int64
	first, i, over := -1, 0, false
	for _, r := range s {
		d := -1
		if r < utf8.RuneSelf {
			d = strings.IndexByte(base58Digits, byte(r))
		}
		if d < 0 {
			return 0, encodingError(Base58, s, fmt.Sprintf("%s at character %d is not in the base58 alphabet (1-9, A-Z and a-z but I, O and l)", quote(string(r)), i+1))
		}
		if first < 0 {
			first = d
		}
		if over = over || n > (math.MaxInt64-int64(d))/58; !over {
			n = n*58 + int64(d)
		}
		i++
	}
	if i > 1 && first == 0 {
		return 0, encodingError(Base58, s, `a leading "1" (the zero digit)`)
	}
	if over {
		return 0, encodingError(Base58, s, `above "NQm6nKp8qFC", the largest ID`)
	}
	return ID(n), nil
}

// An EncodingError reports text that is not an ID in an encoding, as in
// `invalid base32 ID "7ZZ": want 13 characters`. The SQL that sfgen
// renders (snowflake_parse) raises the same message, SQLSTATE 22P02. It
// wraps ErrSyntax.
type EncodingError struct {
	Encoding Encoding
	Input    string // the text given
	Reason   string // why it was rejected
}

func encodingError(e Encoding, s, reason string) error {
	return &EncodingError{Encoding: e, Input: s, Reason: reason}
}

// Error returns, for example, `invalid base32 ID "7ZZ": want 13
// characters`. The input is quoted with quote's escapes, which the SQL
// writes alike; one longer than 32 characters is given by its length.
func (e *EncodingError) Error() string {
	shown := quote(e.Input)
	if n := utf8.RuneCountInString(e.Input); n > shownChars {
		shown = fmt.Sprintf("of %d characters", n)
	}
	return fmt.Sprintf("invalid %s ID %s: %s", e.Encoding, shown, e.Reason)
}

// Unwrap returns ErrSyntax.
func (e *EncodingError) Unwrap() error { return ErrSyntax }

// quote writes s in double quotes as both Go and SQL can: printable ASCII
// as it is, but `"` and `\` escaped with a backslash, and every other
// character as \u and its code point in at least four upper-case hex
// digits (strconv.Quote's choices depend on Unicode tables a database
// does not share).
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= ' ' && r <= '~':
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, `\u%04X`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

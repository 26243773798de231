package sfgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
)

func TestParseID(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    ID
		wantErr error
	}{
		{"4194439168", 4194439168, nil},
		{"0", 0, nil},
		{"9223372036854775807", 1<<63 - 1, nil},
		{"+7", 7, nil},
		{"9223372036854775808", 0, ErrSyntax},
		{"-1", 0, ErrOutOfRange},
		{"-9223372036854775809", 0, ErrOutOfRange},
		{"", 0, ErrSyntax},
		{"abc", 0, ErrSyntax},
		{"1.5", 0, ErrSyntax},
		{" 1", 0, ErrSyntax},
		{"0x10", 0, ErrSyntax},
		// Not numbers, though strconv stops at the overflow and calls
		// them out of range (found by FuzzParseID).
		{"20000000000000000000A", 0, ErrSyntax},
		{"-99999999999999999999x", 0, ErrSyntax},
	} {
		got, err := ParseID(tc.in)
		if got != tc.want || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("ParseID(%q) = %d, %v; want %d, %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
	_, err := ParseID("abc")
	if want := `id "abc" is not a decimal integer`; err.Error() != want {
		t.Errorf("ParseID(abc) error = %q, want %q", err, want)
	}
}

func TestIDJSON(t *testing.T) {
	b, err := json.Marshal(struct{ ID ID }{4194439168})
	if err != nil || string(b) != `{"ID":"4194439168"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	for _, in := range []string{`"9223372036854775807"`, `9223372036854775807`} {
		var id ID
		if err := json.Unmarshal([]byte(in), &id); err != nil || id != 1<<63-1 {
			t.Errorf("Unmarshal(%s) = %d, %v", in, id, err)
		}
	}
	id := ID(5)
	if err := json.Unmarshal([]byte(`null`), &id); err != nil || id != 5 {
		t.Errorf("Unmarshal(null) = %d, %v; want the value kept", id, err)
	}
	for _, in := range []string{`"-1"`, `"x"`, `1.5`, `true`} {
		var id ID
		if err := json.Unmarshal([]byte(in), &id); err == nil {
			t.Errorf("Unmarshal(%s) = %d, want an error", in, id)
		}
	}
}

// FuzzParseID checks ParseID against a hand-written decimal reader
// (oracleParseID) for any string: the same accept or reject, the same
// value, and the documented error: a *RangeError for FieldID for a
// negative number (its value saturated at the int64 minimum), a
// *ParseError for anything else it cannot take.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{
		"0", "4194439168", "9223372036854775807", "007", "+1", "-0", "+0", "00000000000000000000009223372036854775807",
		"9223372036854775808", "18446744073709551616", "99999999999999999999", "+9223372036854775808",
		"-1", "-9223372036854775808", "-9223372036854775809", "-99999999999999999999", "-00",
		"", "+", "-", "+-1", "--1", "++1", " 1", "1 ", "\t1", "1\n", "1_000", "0x10", "0b1", "1e3", "1.0", "x",
		"\u0663", "１", "\x00", "1\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		want, outcome := oracleParseID(s)
		switch outcome {
		case parseOK:
			if err != nil || int64(id) != want {
				t.Fatalf("ParseID(%q) = %d, %v; want %d", s, id, err, want)
			}
		case parseNegative:
			if id != 0 {
				t.Errorf("ParseID(%q) = %d alongside its error, want 0", s, id)
			}
			checkRangeError(t, fmt.Sprintf("ParseID(%q)", s), err, FieldID, want)
			return
		default:
			reason := "is not a decimal integer"
			if outcome == parseTooLarge {
				reason = "is larger than 9223372036854775807"
			}
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrSyntax) || *pe != (ParseError{Input: s, Reason: reason}) || id != 0 {
				t.Fatalf("ParseID(%q) = %d, %v (%T); want 0 and a *ParseError wrapping ErrSyntax with reason %q", s, id, err, err, reason)
			}
			if msg := fmt.Sprintf("id %q %s", s, reason); err.Error() != msg {
				t.Fatalf("ParseID(%q) error = %q, want %q", s, err, msg)
			}
			return
		}
		// Round trip through text and JSON.
		again, err := ParseID(id.String())
		if err != nil || again != id {
			t.Fatalf("ParseID(String(%d)) = %d, %v", id, again, err)
		}
		b, _ := json.Marshal(id)
		var fromJSON ID
		if err := json.Unmarshal(b, &fromJSON); err != nil || fromJSON != id {
			t.Fatalf("JSON round trip of %d = %d, %v", id, fromJSON, err)
		}
	})
}

// TestIDUnmarshalJSON: strings (escapes included) and whole numbers are
// read; negatives are *RangeErrors, and fractions, exponents, overflow and
// other JSON values *ParseErrors, each with its message; on error the ID
// keeps its value.
func TestIDUnmarshalJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ID
	}{
		{`"4194439168"`, 4194439168},
		{`4194439168`, 4194439168},
		{`0`, 0},
		{`-0`, 0},
		{`"0"`, 0},
		{`9223372036854775807`, 1<<63 - 1},
		{`"9223372036854775807"`, 1<<63 - 1},
		{`"\u0031"`, 1},
		{`"\u00342\u0031"`, 421},
		{`"+7"`, 7},
		{`"007"`, 7},
	} {
		var id ID
		if err := id.UnmarshalJSON([]byte(tc.in)); err != nil || id != tc.want {
			t.Errorf("UnmarshalJSON(%s) = %d, %v; want %d", tc.in, id, err, tc.want)
		}
		var s struct{ ID ID }
		if err := json.Unmarshal([]byte(`{"ID":`+tc.in+`}`), &s); err != nil || s.ID != tc.want {
			t.Errorf("json.Unmarshal(%s) = %d, %v; want %d", tc.in, s.ID, err, tc.want)
		}
	}
	for _, tc := range []struct {
		in    string
		field bool // a *RangeError for FieldID, else a *ParseError
		msg   string
	}{
		{`-1`, true, "id -1 out of range [0, 9223372036854775807]"},
		{`"-1"`, true, "id -1 out of range [0, 9223372036854775807]"},
		{`"\u002d1"`, true, "id -1 out of range [0, 9223372036854775807]"},
		{`-99999999999999999999`, true, "id -9223372036854775808 out of range [0, 9223372036854775807]"},
		{`9223372036854775808`, false, `id "9223372036854775808" is larger than 9223372036854775807`},
		{`"9223372036854775808"`, false, `id "9223372036854775808" is larger than 9223372036854775807`},
		{`1.5`, false, `id "1.5" has a fraction; want a whole number`},
		{`1.0`, false, `id "1.0" has a fraction; want a whole number`},
		{`-1.0`, false, `id "-1.0" has a fraction; want a whole number`},
		{`1.0e3`, false, `id "1.0e3" has a fraction; want a whole number`},
		{`1e3`, false, `id "1e3" has an exponent; want the digits of a whole number`},
		{`1E+3`, false, `id "1E+3" has an exponent; want the digits of a whole number`},
		{`9223372036854775807e0`, false, `id "9223372036854775807e0" has an exponent; want the digits of a whole number`},
		{`true`, false, `id "true" is not a JSON string or number`},
		{`{}`, false, `id "{}" is not a JSON string or number`},
		{`[1]`, false, `id "[1]" is not a JSON string or number`},
		{`"1.5"`, false, `id "1.5" is not a decimal integer`},
		{`"1e3"`, false, `id "1e3" is not a decimal integer`},
		{`""`, false, `id "" is not a decimal integer`},
		{`" 1"`, false, `id " 1" is not a decimal integer`},
		{`"\u0031 "`, false, `id "1 " is not a decimal integer`},
		// Not JSON at all: only a direct call can pass these.
		{`01`, false, `id "01" is not a JSON number: leading zero`},
		{`+1`, false, `id "+1" is not a JSON string or number`},
		{`1.`, false, `id "1." is not a JSON string or number`},
		{`1e`, false, `id "1e" is not a JSON string or number`},
		{`"1`, false, `id "\"1" is not a valid JSON string`},
		{`"\x"`, false, `id "\"\\x\"" is not a valid JSON string`},
		{``, false, `id "" is not a JSON string or number`},
	} {
		id := ID(5)
		err := id.UnmarshalJSON([]byte(tc.in))
		if id != 5 {
			t.Errorf("UnmarshalJSON(%s) changed the ID to %d", tc.in, id)
		}
		var re *RangeError
		var pe *ParseError
		switch {
		case err == nil:
			t.Errorf("UnmarshalJSON(%s) = %d, want an error", tc.in, id)
			continue
		case tc.field && (!errors.As(err, &re) || re.Field != FieldID || !errors.Is(err, ErrOutOfRange)):
			t.Errorf("UnmarshalJSON(%s) error = %v (%T), want a *RangeError for id", tc.in, err, err)
		case !tc.field && (!errors.As(err, &pe) || !errors.Is(err, ErrSyntax)):
			t.Errorf("UnmarshalJSON(%s) error = %v (%T), want a *ParseError", tc.in, err, err)
		}
		if err.Error() != tc.msg {
			t.Errorf("UnmarshalJSON(%s) error = %s, want %s", tc.in, err, tc.msg)
		}
		if json.Valid([]byte(tc.in)) {
			var s struct{ ID ID }
			if err := json.Unmarshal([]byte(`{"ID":`+tc.in+`}`), &s); err == nil || err.Error() != tc.msg {
				t.Errorf("json.Unmarshal(%s) error = %v, want %s", tc.in, err, tc.msg)
			}
		}
	}
}

// TestIDMarshalNegative: a negative value is never written as an ID.
func TestIDMarshalNegative(t *testing.T) {
	const msg = "id -5 out of range [0, 9223372036854775807]"
	id := ID(-5)
	if b, err := id.MarshalJSON(); b != nil || !errors.Is(err, ErrOutOfRange) || err.Error() != msg {
		t.Errorf("MarshalJSON(-5) = %s, %v", b, err)
	}
	if b, err := id.MarshalText(); b != nil || !errors.Is(err, ErrOutOfRange) || err.Error() != msg {
		t.Errorf("MarshalText(-5) = %s, %v", b, err)
	}
	if v, err := id.Value(); v != nil || !errors.Is(err, ErrOutOfRange) || err.Error() != msg {
		t.Errorf("Value(-5) = %v, %v", v, err)
	}
	if _, err := json.Marshal(struct{ ID ID }{-5}); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("json.Marshal(-5) error = %v, want ErrOutOfRange", err)
	}
	for _, id := range []ID{0, 4194439168, 1<<63 - 1} {
		b, err := id.MarshalText()
		if err != nil || string(b) != id.String() {
			t.Errorf("MarshalText(%d) = %s, %v", id, b, err)
		}
		if v, err := id.Value(); err != nil || v != int64(id) {
			t.Errorf("Value(%d) = %v (%T), %v; want an int64", id, v, v, err)
		}
	}
}

// TestIDScan: integers and their text are read; NULL, negatives and other
// types are errors, and leave the ID as it was.
func TestIDScan(t *testing.T) {
	for _, tc := range []struct {
		src  any
		want ID
	}{
		{int64(4194439168), 4194439168},
		{int64(0), 0},
		{int64(1<<63 - 1), 1<<63 - 1},
		{[]byte("4194439168"), 4194439168},
		{"4194439168", 4194439168},
	} {
		var id ID
		if err := id.Scan(tc.src); err != nil || id != tc.want {
			t.Errorf("Scan(%#v) = %d, %v; want %d", tc.src, id, err, tc.want)
		}
	}
	for _, tc := range []struct {
		src  any
		want error
		msg  string
	}{
		{nil, ErrNullID, "cannot scan NULL into an ID; use a NullID or *ID for a nullable column"},
		{int64(-1), ErrOutOfRange, "id -1 out of range [0, 9223372036854775807]"},
		{int64(math.MinInt64), ErrOutOfRange, "id -9223372036854775808 out of range [0, 9223372036854775807]"},
		{[]byte("-1"), ErrOutOfRange, "id -1 out of range [0, 9223372036854775807]"},
		{"x", ErrSyntax, `id "x" is not a decimal integer`},
		{[]byte("1.5"), ErrSyntax, `id "1.5" is not a decimal integer`},
		{float64(1), nil, "cannot scan a float64 into an ID; want a bigint"},
		{true, nil, "cannot scan a bool into an ID; want a bigint"},
		{time.Unix(0, 0), nil, "cannot scan a time.Time into an ID; want a bigint"},
	} {
		id := ID(5)
		err := id.Scan(tc.src)
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || err.Error() != tc.msg || id != 5 {
			t.Errorf("Scan(%#v) = %d, %v; want %q and the ID kept", tc.src, id, err, tc.msg)
		}
	}
}

func TestNullID(t *testing.T) {
	n := NullID{ID: 9, Valid: true}
	if err := n.Scan(nil); err != nil || n != (NullID{}) {
		t.Errorf("Scan(nil) = %+v, %v; want invalid", n, err)
	}
	if err := n.Scan(int64(42)); err != nil || n != (NullID{ID: 42, Valid: true}) {
		t.Errorf("Scan(42) = %+v, %v", n, err)
	}
	if err := n.Scan(int64(-1)); !errors.Is(err, ErrOutOfRange) || n != (NullID{ID: 42, Valid: true}) {
		t.Errorf("Scan(-1) = %+v, %v; want ErrOutOfRange and the value kept", n, err)
	}
	if v, err := (NullID{ID: 42}).Value(); v != nil || err != nil {
		t.Errorf("invalid Value() = %v, %v; want nil (NULL)", v, err)
	}
	if v, err := (NullID{ID: 42, Valid: true}).Value(); v != int64(42) || err != nil {
		t.Errorf("Value() = %v, %v; want 42", v, err)
	}
	if _, err := (NullID{ID: -1, Valid: true}).Value(); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("Value() of -1 error = %v, want ErrOutOfRange", err)
	}
	b, err := json.Marshal([]NullID{{}, {ID: 42, Valid: true}, {ID: 7}})
	if err != nil || string(b) != `[null,"42",null]` {
		t.Errorf("json.Marshal = %s, %v", b, err)
	}
	var ns []NullID
	if err := json.Unmarshal([]byte(`[null,"42",42,"\u0034"]`), &ns); err != nil ||
		len(ns) != 4 || ns[0] != (NullID{}) || ns[1] != (NullID{42, true}) || ns[2] != (NullID{42, true}) || ns[3] != (NullID{4, true}) {
		t.Errorf("json.Unmarshal = %+v, %v", ns, err)
	}
	n = NullID{ID: 3, Valid: true}
	if err := n.UnmarshalJSON([]byte(`null`)); err != nil || n != (NullID{}) {
		t.Errorf("UnmarshalJSON(null) = %+v, %v; want invalid", n, err)
	}
	n = NullID{ID: 3, Valid: true}
	if err := n.UnmarshalJSON([]byte(`-3`)); !errors.Is(err, ErrOutOfRange) || n != (NullID{ID: 3, Valid: true}) {
		t.Errorf("UnmarshalJSON(-3) = %+v, %v; want ErrOutOfRange and the value kept", n, err)
	}
}

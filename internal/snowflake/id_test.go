package snowflake

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
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

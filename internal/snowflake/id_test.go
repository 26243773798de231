package snowflake

import (
	"encoding/json"
	"errors"
	"strconv"
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

func FuzzParseID(f *testing.F) {
	for _, s := range []string{"0", "4194439168", "-1", "9223372036854775807", "9223372036854775808", "x", "+1", "007"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		n, perr := strconv.ParseInt(s, 10, 64)
		if (err == nil) != (perr == nil && n >= 0) {
			t.Fatalf("ParseID(%q) = %d, %v; strconv says %d, %v", s, id, err, n, perr)
		}
		if err != nil {
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("ParseID(%q) error %v wraps neither sentinel", s, err)
			}
			return
		}
		if int64(id) != n {
			t.Fatalf("ParseID(%q) = %d, want %d", s, id, n)
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

package pgident

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateSchema(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"public", true},
		{"ids", true},
		{"_x9", true},
		{"snowflake_ids_2", true},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
		{"", false},
		{"9ids", false},
		{"Ids", false},
		{"pg_ids", false},
		{"user", false},
		{"select", false},
		{"my-ids", false},
		{"my ids", false},
		{`x"; DROP TABLE t; --`, false},
		{"ids;", false},
		{"ïds", false},
	} {
		err := ValidateSchema(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateSchema(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		var se *SchemaError
		if err != nil && (!errors.As(err, &se) || se.Name != tc.name || !errors.Is(err, ErrInvalidSchema)) {
			t.Errorf("ValidateSchema(%q) error %v is not a *SchemaError for that name", tc.name, err)
		}
	}
}

// FuzzValidateSchema: a name ValidateSchema accepts is one PostgreSQL
// keeps as typed, so quoting it cannot change its meaning, and it cannot
// end a literal or an identifier or start a comment.
func FuzzValidateSchema(f *testing.F) {
	for _, s := range []string{"public", `x"; DROP TABLE t; --`, "a b", "user", "pg_x", "ids"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if ValidateSchema(name) != nil {
			return
		}
		if strings.ContainsAny(name, "\"'\\;-/* \t\n$") || strings.ToLower(name) != name || len(name) > 63 {
			t.Fatalf("ValidateSchema accepted %q", name)
		}
		if Quote(name) != `"`+name+`"` {
			t.Fatalf("Quote(%q) = %s", name, Quote(name))
		}
	})
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:  `'plain'`,
		`it's`:   `'it''s'`,
		`a\b`:    `E'a\\b'`,
		`it's\'`: `E'it''s\\'''`,
		`%s [0]`: `'%s [0]'`,
		"":       `''`,
	} {
		if got := QuoteLiteral(in); got != want {
			t.Errorf("QuoteLiteral(%q) = %s, want %s", in, got, want)
		}
	}
	if got, want := Quote(`a"b`), `"a""b"`; got != want {
		t.Errorf("Quote = %s, want %s", got, want)
	}
}

// TestValidateSchemaNamesTheCharacter: a name refused for a character
// outside ASCII names that character, not its first byte.
func TestValidateSchemaNamesTheCharacter(t *testing.T) {
	err := ValidateSchema("aïds")
	if err == nil || !strings.Contains(err.Error(), `has 'ï' at byte 1`) {
		t.Errorf("ValidateSchema(aïds) = %v; want it to name 'ï' at byte 1", err)
	}
}

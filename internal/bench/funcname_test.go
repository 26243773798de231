package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

// funcNames are names ParseFuncName takes, with the parts it reads and
// the call it writes.
var funcNames = []struct {
	in           string
	schema, name string
	text, call   string
}{
	{"nextval", "", "nextval", "nextval()", `"nextval"()`},
	{"snowflake.nextval", "snowflake", "nextval", "snowflake.nextval()", `"snowflake"."nextval"()`},
	{"snowflake.nextval()", "snowflake", "nextval", "snowflake.nextval()", `"snowflake"."nextval"()`},
	{"Peer.Next_ID", "peer", "next_id", "Peer.Next_ID()", `"peer"."next_id"()`},
	{"_a$1.b2$", "_a$1", "b2$", "_a$1.b2$()", `"_a$1"."b2$"()`},
	{`"Peer"."Next ID"`, "Peer", "Next ID", `"Peer"."Next ID"()`, `"Peer"."Next ID"()`},
	{`"a""b".c`, `a"b`, "c", `"a""b".c()`, `"a""b"."c"()`},
	{`"x.y"`, "", "x.y", `"x.y"()`, `"x.y"()`},
	{`"1".f`, "1", "f", `"1".f()`, `"1"."f"()`},
	{`"a"")""".f`, `a")"`, "f", `"a"")""".f()`, `"a"")"""."f"()`},
	{"ÄÉ.ö", "ÄÉ", "ö", "ÄÉ.ö()", `"ÄÉ"."ö"()`}, // beyond ASCII, kept as written
	{"select", "", "select", "select()", `"select"()`},
	{strings.Repeat("a", 63), "", strings.Repeat("a", 63), strings.Repeat("a", 63) + "()", `"` + strings.Repeat("a", 63) + `"()`},
}

// badFuncNames are names ParseFuncName refuses, with what its error says.
var badFuncNames = []struct{ in, reason string }{
	{"", "has an empty part at byte 0"},
	{"()", "has an empty part at byte 0"},
	{"1x", "has a part starting with a digit at byte 0"},
	{"a.1x", "has a part starting with a digit at byte 2"},
	{"$a", "has '$' at byte 0"},
	{"a b", "has ' ' at byte 1"},
	{"a.", "has an empty part at byte 2"},
	{".a", "has an empty part at byte 0"},
	{"a..b", "has an empty part at byte 2"},
	{"a.b.c", "has 3 dotted parts"},
	{"a;drop table x", "has ';' at byte 1"},
	{"a()--", "has '(' at byte 1"},
	{"a(1)", "has '(' at byte 1"},
	{`""`, "has an empty quoted identifier at byte 0"},
	{`"a`, "has an unterminated quoted identifier at byte 0"},
	{`"a"b`, `has 'b' at byte 3`},
	{`"a""`, "has an unterminated quoted identifier at byte 0"},
	{"\"a\x00\"", "has a NUL byte at byte 0"},
	{"a\xff", "is not valid UTF-8"},
	{strings.Repeat("a", 64), "has a part of 64 bytes at byte 0"},
	{"s." + strings.Repeat("b", 64), "has a part of 64 bytes at byte 2"},
}

func TestParseFuncName(t *testing.T) {
	for _, tc := range funcNames {
		f, err := ParseFuncName(tc.in)
		if err != nil || f.Schema != tc.schema || f.Name != tc.name || f.Text != tc.text || f.Call() != tc.call {
			t.Errorf("ParseFuncName(%q) = %+v (call %s), %v; want %q.%q, text %s, call %s", tc.in, f, f.Call(), err, tc.schema, tc.name, tc.text, tc.call)
		}
	}
	for _, tc := range badFuncNames {
		f, err := ParseFuncName(tc.in)
		var fe *FuncNameError
		if !errors.As(err, &fe) || !errors.Is(err, ErrBadFuncName) || fe.Value != tc.in || fe.Reason != tc.reason {
			t.Errorf("ParseFuncName(%q) = %+v, %v; want a *FuncNameError: %s", tc.in, f, err, tc.reason)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("%q", tc.in)) || !strings.Contains(msg, "want name or schema.name") {
			t.Errorf("ParseFuncName(%q): %q names neither the value nor what is allowed", tc.in, msg)
		}
	}
}

// TestParseFuncNameAsPostgreSQL: the parts ParseFuncName reads are the
// ones PostgreSQL's parse_ident() reads from the same text (without the
// trailing "()"), and what it refuses, parse_ident() refuses too (but for
// the spaces around dots, the more than two parts and the over-long
// names that parse_ident() takes).
func TestParseFuncNameAsPostgreSQL(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, tc := range funcNames {
		var parts []string
		if err := conn.QueryRow(ctx, "SELECT pg_catalog.parse_ident($1)", strings.TrimSuffix(tc.in, "()")).Scan(&parts); err != nil {
			t.Errorf("parse_ident(%q): %v", tc.in, err)
			continue
		}
		f, _ := ParseFuncName(tc.in)
		want := []string{f.Name}
		if f.Schema != "" {
			want = []string{f.Schema, f.Name}
		}
		if !slices.Equal(parts, want) {
			t.Errorf("%q: PostgreSQL reads %q, ParseFuncName %q", tc.in, parts, want)
		}
	}
	for _, tc := range badFuncNames {
		switch tc.in {
		case "a.b.c", "a\xff", strings.Repeat("a", 64), "s." + strings.Repeat("b", 64):
			continue // parse_ident() takes these (or the driver refuses the text)
		}
		var parts []string
		err := conn.QueryRow(ctx, "SELECT pg_catalog.parse_ident($1)", strings.TrimSuffix(tc.in, "()")).Scan(&parts)
		if err == nil {
			t.Errorf("parse_ident(%q) = %q; ParseFuncName refuses it: %s", tc.in, parts, tc.reason)
		}
	}
}

// FuzzParseFuncName: a name ParseFuncName takes gives a call that it
// reads back to the same parts.
func FuzzParseFuncName(f *testing.F) {
	for _, tc := range funcNames {
		f.Add(tc.in)
	}
	for _, tc := range badFuncNames {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fn, err := ParseFuncName(s)
		if err != nil {
			return
		}
		again, err := ParseFuncName(fn.Call())
		if err != nil || again.Schema != fn.Schema || again.Name != fn.Name {
			t.Errorf("ParseFuncName(%q) = %+v; its call %s reads back as %+v, %v", s, fn, fn.Call(), again, err)
		}
	})
}

func ExampleParseFuncName() {
	for _, s := range []string{"snowflake.nextval", `Peer."Next ID"()`, "public.f;"} {
		f, err := ParseFuncName(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(f.Text, f.Call())
	}
	// Output:
	// snowflake.nextval() "snowflake"."nextval"()
	// Peer."Next ID"() "peer"."Next ID"()
	// compare function "public.f;" has ';' at byte 8; want name or schema.name, each part an identifier: unquoted (letters, digits, _ and $, not starting with a digit; folded to lower case) or in double quotes ("" for a quote), at most 63 bytes
}

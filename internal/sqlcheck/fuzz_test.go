package sqlcheck

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// A planted lookup: where the generator put it in the unqualified SQL.
type planted struct {
	offset int
	rule   Rule
}

// gen writes two versions of the same SQL from the fuzzer's bytes: bad,
// with unqualified operators, calls, types and syntax at offsets it
// records, and good, with each of those written qualified. Everything
// else (comments, strings, keyword types, constants) is the same in both.
type gen struct {
	data      []byte
	i         int
	bad, good strings.Builder
	want      []planted
	quoted    bool // inside a '...' function body: double every quote
}

func (g *gen) pick(n int) int {
	if g.i >= len(g.data) {
		return 0
	}
	b := g.data[g.i]
	g.i++
	return int(b) % n
}

func (g *gen) both(s string) {
	if g.quoted {
		s = strings.ReplaceAll(s, "'", "''")
	}
	g.bad.WriteString(s)
	g.good.WriteString(s)
}

func (g *gen) plant(bad, good string, r Rule) {
	if g.quoted {
		bad, good = strings.ReplaceAll(bad, "'", "''"), strings.ReplaceAll(good, "'", "''")
	}
	g.want = append(g.want, planted{g.bad.Len(), r})
	g.bad.WriteString(bad)
	g.good.WriteString(good)
}

var (
	genOps   = []string{"<", ">", "=", "<=", ">=", "<>", "+", "-", "*", "/", "%", "||", "<<", ">>", "&", "|", "#", "~", "@>", "!~"}
	genFuncs = []string{"lower", "now", "random", "pg_advisory_lock", "format", "substring", "left", "count", `"upper"`}
	genTypes = []string{"text", "timestamptz", "regrole", // not regclass: ('a')::regclass reads a name
		"bool", "int8", "oid", "void", `"char"`}
	genKeyT  = []string{"bigint", "integer", "boolean", "double precision", "numeric(10, 2)", "bit(64)", "timestamp with time zone", "character varying"}
	genTerms = []string{"a", "b.c", "42", "(-1)", "1.5e-3", "$1", `"Mixed Case"`, "'a < b'", "'it''s = x'", "E'\\' < '", "NULL", "TRUE", "CURRENT_TIMESTAMP"}
)

func (g *gen) expr(depth int) {
	if depth > 3 {
		g.both(genTerms[g.pick(len(genTerms))])
		return
	}
	switch g.pick(19) {
	case 0, 1:
		g.both("(")
		defer g.both(")")
		g.expr(depth + 1)
		g.both(" ")
		op := genOps[g.pick(len(genOps))]
		g.plant(op, "OPERATOR(pg_catalog."+op+")", RuleOperator)
		g.both(" ")
		g.expr(depth + 1)
	case 2:
		fn := genFuncs[g.pick(len(genFuncs))]
		g.plant(fn, "pg_catalog."+fn, RuleFunction)
		g.both("(")
		g.expr(depth + 1)
		g.both(")")
	case 3:
		g.both("(")
		g.expr(depth + 1)
		g.both(")::")
		ty := genTypes[g.pick(len(genTypes))]
		g.plant(ty, "pg_catalog."+ty, RuleType)
	case 4:
		g.both("CAST(")
		g.expr(depth + 1)
		g.both(" AS " + genKeyT[g.pick(len(genKeyT))] + ")")
	case 5:
		g.both("(")
		defer g.both(")")
		g.expr(depth + 1)
		g.both(" ")
		g.plant("IS DISTINCT FROM", "OPERATOR(pg_catalog.=)", RuleSyntax)
		g.both(" ")
		g.expr(depth + 1)
	case 6:
		g.both("(")
		defer g.both(")")
		g.expr(depth + 1)
		g.both(" ")
		g.plant("IN (", "OPERATOR(pg_catalog.=) ANY (ARRAY[", RuleSyntax)
		g.expr(depth + 1)
		g.both(", ")
		g.expr(depth + 1)
		g.bad.WriteString(")")
		g.good.WriteString("])")
	case 7:
		g.plant("CASE", "CASE WHEN", RuleSyntax)
		g.both(" ")
		g.expr(depth + 1)
		g.bad.WriteString(" WHEN ")
		g.good.WriteString(" OPERATOR(pg_catalog.=) ")
		g.expr(depth + 1)
		g.both(" THEN ")
		g.expr(depth + 1)
		g.both(" END")
	case 8:
		g.both("CASE WHEN ")
		g.expr(depth + 1)
		g.both(" THEN ")
		g.expr(depth + 1)
		g.both(" ELSE ")
		g.expr(depth + 1)
		g.both(" END")
	case 9:
		g.both("COALESCE(")
		g.expr(depth + 1)
		g.both(", ")
		g.expr(depth + 1)
		g.both(")")
	case 10:
		g.both("/* x < y /* nested = */ */ ")
		g.expr(depth + 1)
		g.both(" -- z > w\n")
	case 11:
		g.both("(")
		defer g.both(")")
		g.expr(depth + 1)
		g.both(" ")
		g.plant("LIKE", "OPERATOR(pg_catalog.~~)", RuleSyntax)
		g.both(" ")
		g.expr(depth + 1)
	case 12:
		g.both("(")
		defer g.both(")")
		g.expr(depth + 1)
		g.both(" IS NOT NULL")
	case 13:
		g.both("(")
		g.expr(depth + 1)
		g.both(")::" + genKeyT[g.pick(len(genKeyT))])
	case 14:
		g.both("(SELECT ")
		g.expr(depth + 1)
		g.both(" FROM ")
		g.plant("pg_class", "pg_catalog.pg_class", RuleRelation)
		g.both(" c WHERE ")
		g.expr(depth + 1)
		g.both(")")
	case 15:
		g.plant("'seq'", `'"public".seq'`, RuleString)
		g.both("::pg_catalog.regclass")
	case 16:
		g.both("pg_catalog.to_regprocedure(")
		g.plant("'f(integer)'", `'ids.f(integer)'`, RuleString)
		g.both(")")
	default:
		g.both(genTerms[g.pick(len(genTerms))])
	}
}

// statement writes one statement holding an expression, in one of the
// places where code can be: plain SQL, a PL/pgSQL body, a SQL function
// body quoted either way, a nested dollar quote run by EXECUTE.
func (g *gen) statement() {
	switch g.pick(6) {
	case 0:
		g.both("SELECT ")
		g.expr(0)
		g.both(";\n")
	case 1:
		g.both("DO $do$\nBEGIN\n    PERFORM ")
		g.expr(0)
		g.both(";\nEND\n$do$;\n")
	case 2:
		g.both(`CREATE OR REPLACE FUNCTION "public".f() RETURNS bigint LANGUAGE sql AS $fn$ SELECT `)
		g.expr(0)
		g.both(" $fn$;\n")
	case 3:
		g.both(`CREATE OR REPLACE FUNCTION "public".f() RETURNS bigint LANGUAGE sql AS 'SELECT `)
		g.quoted = true
		g.expr(0)
		g.quoted = false
		g.both("';\n")
	case 4:
		g.both("DO $$ DECLARE w ")
		g.plant("timestamptz", "pg_catalog.timestamptz", RuleType)
		g.both("; v bigint; BEGIN v := ")
		g.expr(0)
		g.both("; END $$;\n")
	default:
		g.both("DO $$ BEGIN EXECUTE $x$SELECT ")
		g.expr(0)
		g.both("$x$; END $$;\n")
	}
}

// checkInvariants checks what must hold for any input: findings in order,
// inside the input, with Line and Col that match Offset.
func checkInvariants(t *testing.T, sql []byte, fs []Finding) {
	t.Helper()
	last := -1
	for _, f := range fs {
		if f.Offset < last || f.Offset < 0 || f.Offset >= len(sql) {
			t.Fatalf("finding %v: offset %d out of order or out of range (len %d)", f, f.Offset, len(sql))
		}
		last = f.Offset
		line := 1 + bytes.Count(sql[:f.Offset], []byte("\n"))
		col := f.Offset - bytes.LastIndexByte(sql[:f.Offset], '\n')
		if f.Line != line || f.Col != col {
			t.Fatalf("finding %v: at %d:%d, offset %d is %d:%d", f, f.Line, f.Col, f.Offset, line, col)
		}
		if f.Rule == "" || f.Reason == "" || f.Text == "" {
			t.Fatalf("finding %v lacks a rule, text or reason", f)
		}
	}
}

func FuzzCheck(f *testing.F) {
	SkipUnsupported(f)
	for _, s := range []string{
		"", "\x00\x01\x02\x03", "\x05\x02\x03\x01\x00\x07\x06", "\x03\x02\x01\x03\x04\x05\x06\x07\x08\x09\x0a\x0b",
		"SELECT a < b;", "DO $$ BEGIN x := 1; END $$;", "$a$ $b$ $a$", "'", "\"", "/*", "$$", "E'\\",
		"CREATE FUNCTION \"public\".f() RETURNS void LANGUAGE plpgsql AS $fn$ BEGIN EXECUTE pg_catalog.format($ddl$ SELECT %s::text $ddl$, 1); END $fn$;",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Any input: no panic, and findings that make sense.
		checkInvariants(t, data, Check(data, own))

		// Generated input: exactly the planted findings, and none once
		// they are qualified.
		g := &gen{data: data}
		for n := 1 + g.pick(3); n > 0; n-- {
			g.statement()
		}
		bad, good := []byte(g.bad.String()), []byte(g.good.String())
		fs := Check(bad, own)
		checkInvariants(t, bad, fs)
		var got, want []string
		for _, f := range fs {
			got = append(got, fmt.Sprintf("%d %s", f.Offset, f.Rule))
		}
		for _, p := range g.want {
			want = append(want, fmt.Sprintf("%d %s", p.offset, p.rule))
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("SQL:\n%s\nfindings %v\nplanted  %v", bad, fs, want)
		}
		if fs := Check(good, own); len(fs) != 0 {
			t.Fatalf("qualified SQL:\n%s\nhas findings %v", good, fs)
		}
	})
}

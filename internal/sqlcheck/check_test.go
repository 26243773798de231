package sqlcheck

import (
	"strings"
	"testing"
)

var own = Options{OwnSchemas: []string{`"public"`, "ids"}}

// summary lists findings as "rule text", one each.
func summary(fs []Finding) []string {
	var s []string
	for _, f := range fs {
		s = append(s, string(f.Rule)+" "+f.Text)
	}
	return s
}

type checkCase struct {
	name string
	sql  string
	want []string // "rule text" of each finding, in order
}

func runCases(t *testing.T, cases []checkCase) {
	t.Helper()
	SkipUnsupported(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := summary(Check([]byte(tc.sql), own))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Check(%q)\n got: %q\nwant: %q", tc.sql, got, tc.want)
			}
		})
	}
}

func TestOperators(t *testing.T) {
	runCases(t, []checkCase{
		{"comparison", "SELECT a < b;", []string{"operator <"}},
		{"qualified", "SELECT a OPERATOR(pg_catalog.<) b;", nil},
		{"qualified quoted", `SELECT a OPERATOR("pg_catalog".<) b;`, nil},
		{"qualified own schema", `SELECT a OPERATOR("public".<) b;`, nil},
		{"OPERATOR without schema", "SELECT a OPERATOR(<) b;", []string{"operator OPERATOR(<)"}},
		{"OPERATOR other schema", "SELECT a OPERATOR(evil.<) b;", []string{"operator OPERATOR(evil.<)"}},
		{"concatenation", "SELECT a||b;", []string{"operator ||"}},
		{"every operator", "SELECT a + b - c * d / e % f ^ g & h | i # j ~ k << l >> m <> (n != (o <= (p >= (q @> r))));",
			[]string{"operator +", "operator -", "operator *", "operator /", "operator %", "operator ^", "operator &",
				"operator |", "operator #", "operator ~", "operator <<", "operator >>", "operator <>", "operator !=",
				"operator <=", "operator >=", "operator @>"}},
		{"prefix operators", "SELECT ~x, @y, -z, +1;", []string{"operator ~", "operator @", "operator -", "operator +"}},
		{"minus folded into a constant", "SELECT -1, - 2.5, -(3), pg_catalog.abs(-4), a=-1;", []string{"operator ="}},
		{"minus binds looser than a cast", "SELECT -1::int, -(1)::int, -x;", []string{"operator -", "operator -", "operator -"}},
		{"binary minus before a constant", "SELECT a -1, 2 - -1, (a) - 1;", []string{"operator -", "operator -", "operator -"}},
		{"trailing minus is cut off", "SELECT a<-b;", []string{"operator <", "operator -"}},
		{"trailing minus kept after @", "SELECT a@-b;", []string{"operator @-"}},
		{"operator stops at a comment", "SELECT a</*c*/b, c<--d\n1;", []string{"operator <", "operator <"}},
		{"star", "SELECT *, t.* FROM pg_catalog.pg_class t; SELECT pg_catalog.count(*); SELECT DISTINCT * FROM pg_catalog.pg_class;", nil},
		{"multiplication", "SELECT 2*3, a * b, (a) * (b), x.y * 2;", []string{"operator *", "operator *", "operator *", "operator *"}},
		{"cast and named argument", "SELECT x::pg_catalog.int4, pg_catalog.make_interval(days => 1);", nil},
		{"SET statement", "SET search_path = pg_catalog, pg_temp; SET LOCAL work_mem TO '1MB'; RESET ALL;", nil},
		{"function SET clause",
			`CREATE FUNCTION "public".f() RETURNS integer LANGUAGE sql SET search_path = pg_catalog, pg_temp SET work_mem = '1MB' AS $$ SELECT 1 $$;`, nil},
		{"catalog WHERE", "SELECT 1 FROM pg_catalog.pg_proc p WHERE p.proname = 'x' AND p.oid > 0;", []string{"operator =", "operator >"}},
		{"catalog WHERE qualified", "SELECT 1 FROM pg_catalog.pg_proc p WHERE p.proname OPERATOR(pg_catalog.=) 'x';", nil},
		{"UPDATE SET", `UPDATE "public".t SET a = 1, b = a + 1, (c, d) = (1, 2) WHERE e = 3;`, []string{"operator +", "operator ="}},
		{"ON CONFLICT DO UPDATE SET", `INSERT INTO "public".t (a) VALUES (1) ON CONFLICT (a) DO UPDATE SET a = 2;`, nil},
		{"DDL options", `CREATE TABLE "public".t (a integer) WITH (fillfactor = 70);`, nil},
		{"placeholders in a dollar-quoted format string",
			"DO $$ BEGIN EXECUTE pg_catalog.format($x$SELECT %s::bigint, %1$I.f(), %-10L, 5 %% 2$x$, 1); END $$;",
			[]string{"operator %%"}},
	})
}

func TestPLpgSQLSyntax(t *testing.T) {
	runCases(t, []checkCase{
		{"assignments", "DO $$ DECLARE x integer := 1; y integer = 2; z integer[] DEFAULT '{3}'; r record; BEGIN x := 4; y = 5; z[1] := 6; r.f := 7; END $$;",
			[]string{"type record"}}, // pg_query's PL/pgSQL knows r.f only of an unqualified record
		{"assignment of a comparison", "DO $$ DECLARE b boolean; BEGIN b := x = 1; b = x < 2; END $$;",
			[]string{"operator =", "operator <"}},
		{"RAISE USING", "DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'm', DETAIL = 'd', HINT = 'h'; END $$;", nil},
		{"RAISE USING expression", "DO $$ BEGIN RAISE NOTICE 'n % %', a + 1, b USING HINT = 'a' || 'b'; END $$;",
			[]string{"operator +", "operator ||"}},
		{"RAISE condition", "DO $$ BEGIN RAISE division_by_zero; RAISE SQLSTATE '22012' USING MESSAGE = 'x'; RAISE; END $$;", nil},
		{"exception handler", "DO $$ DECLARE x integer; BEGIN NULL; EXCEPTION WHEN SQLSTATE 'SF001' OR division_by_zero THEN NULL; WHEN others THEN x = 1; RAISE; END $$;", nil},
		{"labels and %TYPE", "DO $$ <<outer>> DECLARE v x%TYPE; BEGIN <<inner>> LOOP EXIT outer WHEN true; END LOOP inner; END outer $$;", nil},
		{"GET DIAGNOSTICS", "DO $$ DECLARE n bigint; BEGIN GET DIAGNOSTICS n = ROW_COUNT; END $$;", nil},
		{"integer FOR", "DO $$ BEGIN FOR i IN REVERSE 10..1 BY 2 LOOP NULL; END LOOP; END $$;", nil},
		{"query FOR", "DO $$ DECLARE r record; BEGIN FOR r IN (SELECT 1) LOOP END LOOP; FOR r IN SELECT a < b LOOP END LOOP; END $$;",
			[]string{"type record", "operator <"}},
		{"IF and WHILE", "DO $$ DECLARE x integer; BEGIN IF a < 1 THEN x := CASE WHEN b THEN 1 ELSE 2 END; ELSIF c THEN NULL; ELSE NULL; END IF; WHILE d > 0 LOOP END LOOP; END $$;",
			[]string{"operator <", "operator >"}},
		{"THEN inside a CASE expression is not a statement", "DO $$ BEGIN IF (CASE WHEN a THEN b = c END) THEN NULL; END IF; END $$;",
			[]string{"operator ="}},
		{"option", "CREATE FUNCTION \"public\".f() RETURNS integer LANGUAGE plpgsql AS $$\n#variable_conflict use_column\nBEGIN RETURN 1; END $$;", nil},
		{"PERFORM and RETURN call", "DO $$ BEGIN PERFORM f(1); RETURN g(2); END $$;", []string{"function f", "function g"}},
		{"cursor", "DO $$ DECLARE x integer; c CURSOR (k integer) FOR SELECT k; BEGIN OPEN c(1); FETCH c INTO x; CLOSE c; END $$;", nil},
	})
}

func TestSyntax(t *testing.T) {
	runCases(t, []checkCase{
		{"IS DISTINCT FROM", "SELECT a IS DISTINCT FROM b, a IS NOT DISTINCT FROM b;", []string{"syntax IS DISTINCT FROM", "syntax IS NOT DISTINCT FROM"}},
		{"IS NULL", "SELECT a IS NULL, a IS NOT TRUE, a ISNULL;", nil},
		{"BETWEEN", "SELECT a BETWEEN 1 AND 2, a NOT BETWEEN SYMMETRIC 1 AND 2;", []string{"syntax BETWEEN", "syntax NOT BETWEEN"}},
		{"window frame", "SELECT pg_catalog.sum(a) OVER (ORDER BY a ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t2;", []string{"relation t2"}},
		{"IN", "SELECT a IN (1, 2), a NOT IN (SELECT 1);", []string{"syntax IN (", "syntax NOT IN ("}},
		{"ANY ALL SOME", "SELECT a = ANY (b), a < ALL(b), a <> SOME (b);", []string{"syntax = ANY", "syntax < ALL", "syntax <> SOME"}},
		{"qualified ANY", "SELECT a OPERATOR(pg_catalog.=) ANY (b); SELECT 1 UNION ALL (SELECT 2);", nil},
		{"LIKE", "SELECT a LIKE b, a NOT LIKE b, a ILIKE b, a NOT ILIKE b;", []string{"syntax LIKE", "syntax NOT LIKE", "syntax ILIKE", "syntax NOT ILIKE"}},
		{"SIMILAR TO", "SELECT a SIMILAR TO b, a NOT SIMILAR TO b;", []string{"syntax SIMILAR TO", "syntax NOT SIMILAR TO"}},
		{"NULLIF", "SELECT NULLIF(a, b), nullif (a, b);", []string{"syntax NULLIF", "syntax nullif"}},
		{"simple CASE", "SELECT CASE a WHEN 1 THEN 2 END, CASE (a) WHEN 1 THEN 2 END;", []string{"syntax CASE", "syntax CASE"}},
		{"searched CASE", "SELECT CASE WHEN a THEN 1 ELSE CASE WHEN b THEN 2 END END;", nil},
		{"simple CASE statement", "DO $$ BEGIN CASE x WHEN 1, 2 THEN NULL; ELSE NULL; END CASE; CASE WHEN y THEN NULL; END CASE; END $$;", []string{"syntax CASE"}},
		{"NATURAL JOIN and USING", "SELECT 1 FROM pg_catalog.pg_class a NATURAL JOIN pg_catalog.pg_class b JOIN pg_catalog.pg_class c USING (oid);",
			[]string{"syntax NATURAL", "syntax USING"}},
		{"JOIN ON", "SELECT 1 FROM pg_catalog.pg_class a JOIN pg_catalog.pg_class b ON a.oid OPERATOR(pg_catalog.=) b.oid;", nil},
		{"OVERLAPS is pg_catalog.overlaps", "SELECT (a, b) OVERLAPS (c, d);", nil},
		{"POSITION IN", "SELECT POSITION('a' IN 'abc'), position(('a') IN ('abc'));", nil},
	})
}

func TestFunctions(t *testing.T) {
	runCases(t, []checkCase{
		{"unqualified", "SELECT now(), pg_advisory_lock (1);", []string{"function now", "function pg_advisory_lock"}},
		{"qualified", `SELECT pg_catalog.now(), "pg_catalog".now(), "public".f(), ids.g(), "ids".h();`, nil},
		{"other schema", "SELECT evil.now(), db.evil.now();", []string{"function evil.now", "function db.evil.now"}},
		{"quoted name", `SELECT "now"();`, []string{`function "now"`}},
		{"keyword constructs", "SELECT COALESCE(a, b), GREATEST(1, 2), LEAST(1, 2), EXTRACT(epoch FROM t), CAST(a AS integer), ROW(1, 2), ARRAY(SELECT 1), EXISTS (SELECT 1), TRIM(BOTH FROM a), TRIM(a), NORMALIZE(a), XMLCONCAT(a);", nil},
		{"substring and overlay", "SELECT substring(a, 1, 2), substring(a FROM 1 FOR 2), overlay(a, b, 1, 2), overlay(a PLACING b FROM 1), SUBSTRING(a SIMILAR b ESCAPE c);",
			[]string{"function substring", "function overlay"}},
		{"type-or-function keywords", "SELECT left('a', 1), right('a', 1), current_schema(), current_schema;", []string{"function left", "function right", "function current_schema"}},
		{"aliases and CTEs", "WITH x(a) AS (SELECT 1), y AS MATERIALIZED (SELECT 2) SELECT * FROM pg_catalog.generate_series(1, 2) AS g(i), pg_catalog.unnest(b) u(j), x, y;", nil},
		{"aggregate clauses", "SELECT count(*) FILTER (WHERE a) OVER (PARTITION BY b), pg_catalog.string_agg(a, ',' ORDER BY a), pg_catalog.percentile_disc(0.5) WITHIN GROUP (ORDER BY a);",
			[]string{"function count"}},
		{"CREATE FUNCTION name", "CREATE FUNCTION f() RETURNS integer LANGUAGE sql AS 'SELECT 1'; CREATE FUNCTION evil.g() RETURNS integer LANGUAGE sql AS 'SELECT 1';",
			[]string{"function f", "function evil.g"}},
		{"DDL on functions", `COMMENT ON FUNCTION "public".f(integer) IS 'c'; DROP FUNCTION IF EXISTS "public".f(integer), g(); GRANT EXECUTE ON FUNCTION "public".f() TO PUBLIC; REVOKE ALL ON FUNCTION h() FROM PUBLIC; ALTER FUNCTION "public".f() SET search_path = pg_catalog;`,
			[]string{"function g", "function h"}},
		{"DDL on pg_catalog functions", "REVOKE ALL ON FUNCTION pg_catalog.pg_advisory_lock(bigint) FROM PUBLIC;", nil},
		{"trigger", `CREATE TRIGGER t BEFORE INSERT ON "public".x FOR EACH ROW WHEN (NEW.a > 0) EXECUTE FUNCTION trg();`,
			[]string{"operator >", "function trg"}},
		{"no call in DDL column lists", `CREATE TABLE "public".t (a integer PRIMARY KEY, b integer REFERENCES "public".u (c), UNIQUE (a, b), CHECK (a OPERATOR(pg_catalog.>) 0)); INSERT INTO "public".t (a, b) VALUES (1, 2);`, nil},
	})
}

func TestTypes(t *testing.T) {
	runCases(t, []checkCase{
		{"casts", "SELECT a::text, a::pg_catalog.text, a::bool, a::\"char\", a::text[], a::regclass;",
			[]string{"type text", "type bool", `type "char"`, "type text", "type regclass"}},
		{"keyword types", "SELECT a::int, a::integer, a::smallint, a::bigint, a::real, a::float(24), a::double precision, a::decimal(10, 2), a::dec, a::numeric, a::boolean, a::bit(64), a::bit varying(3), a::character varying(5), a::char, a::varchar(5), a::national character varying, a::nchar(2), a::timestamp(3) with time zone, a::time without time zone, a::interval, a::interval day to second(3), a::int[], a::integer ARRAY[3];", nil},
		{"qualified with modifiers", "SELECT a::pg_catalog.bit(64), a::pg_catalog.varchar(5)[];", nil},
		{"not keywords", "SELECT a::double, a::json, a::date, a::timestamptz, a::int8;",
			[]string{"type double", "type json", "type date", "type timestamptz", "type int8"}},
		{"CAST", "SELECT CAST(a AS text), CAST(a AS integer), CAST(CAST(a AS pg_catalog.text) AS int4);", []string{"type text", "type int4"}},
		{"typed literals", "SELECT timestamptz '2020-01-01', regclass 'x', DATE '2020-01-01', text 'a', \"int4\" '1', evil.t 'x';",
			[]string{"type timestamptz", "type regclass", "string 'x'", "type DATE", "type text", `type "int4"`, "type evil.t"}},
		{"keyword and qualified typed literals", "SELECT INTERVAL '1 ms', TIMESTAMP WITH TIME ZONE '2020-01-01', pg_catalog.date '2020-01-01', a AT TIME ZONE 'UTC', a LIKE b ESCAPE '!';",
			[]string{"syntax LIKE"}},
		{"RETURNS", `CREATE FUNCTION "public".f() RETURNS void LANGUAGE sql AS 'SELECT'; CREATE FUNCTION "public".g() RETURNS SETOF text LANGUAGE sql AS 'SELECT 1'; CREATE FUNCTION "public".h() RETURNS record LANGUAGE sql AS 'SELECT 1'; CREATE FUNCTION "public".i() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END';`,
			[]string{"type void", "type text", "type record", "type trigger"}},
		{"RETURNS qualified", `CREATE FUNCTION "public".f() RETURNS pg_catalog.void LANGUAGE sql AS 'SELECT'; CREATE FUNCTION "public".g() RETURNS TABLE (a pg_catalog.text, b bigint) LANGUAGE sql AS 'SELECT 1'; CREATE FUNCTION "public".h() RETURNS integer RETURNS NULL ON NULL INPUT LANGUAGE sql AS 'SELECT 1';`, nil},
		{"RETURNS TABLE", `CREATE FUNCTION "public".g() RETURNS TABLE (a text, b bigint) LANGUAGE sql AS 'SELECT 1';`, []string{"type text"}},
		{"arguments", `CREATE FUNCTION "public".f(a text, b integer DEFAULT 1 + 1, OUT c timestamptz, ts timestamptz, double precision, INOUT d bigint = 2) LANGUAGE sql AS 'SELECT 1';`,
			[]string{"type text", "operator +", "type timestamptz", "type timestamptz"}},
		{"signatures", `COMMENT ON FUNCTION "public".f(bigint, timestamptz, double precision, timestamp with time zone, time(3) without time zone) IS 'x'; DROP FUNCTION "public".g(text);`,
			[]string{"type timestamptz", "type text"}},
		{"DECLARE", "DO $$ DECLARE a text; b pg_catalog.text; c CONSTANT pg_catalog.regclass := '\"public\".s'; d bigint NOT NULL := 1; e t.c%TYPE; f \"public\".t.c%TYPE; BEGIN END $$;",
			[]string{"type text", "type t.c%TYPE"}},
		{"sequence", `CREATE SEQUENCE "public".s AS bigint START WITH -1; CREATE SEQUENCE "public".t AS int8;`, []string{"type int8"}},
		{"column types", `CREATE TABLE "public".t (a text, b pg_catalog.text COLLATE pg_catalog."C", c integer DEFAULT 1);`, []string{"type text"}},
		{"collation", `SELECT a COLLATE "C", a COLLATE pg_catalog."C";`, []string{`collation "C"`}},
	})
}

func TestRelations(t *testing.T) {
	runCases(t, []checkCase{
		{"FROM and JOIN", "SELECT 1 FROM pg_class c JOIN pg_namespace n ON true, pg_catalog.pg_proc p LEFT JOIN evil.x ON true;",
			[]string{"relation pg_class", "relation pg_namespace", "relation evil.x"}},
		{"CTE", "WITH q AS (SELECT 1) SELECT * FROM q;", nil},
		{"subqueries", "SELECT EXISTS (SELECT 1 FROM pg_proc), ARRAY(SELECT 1 FROM pg_type), 1 IN (SELECT 1 FROM pg_class);",
			[]string{"relation pg_proc", "relation pg_type", "syntax IN (", "relation pg_class"}},
		{"LOCK", `LOCK TABLE t, "public".u IN SHARE MODE; LOCK ONLY v NOWAIT;`, []string{"relation t", "relation v"}},
		{"subquery aliases", "SELECT 1 FROM (SELECT 1 FROM pg_catalog.pg_class UNION ALL SELECT 2) o, (SELECT 3) AS p JOIN (SELECT 4) q ON true;", nil},
		{"FROM item after a subquery", "SELECT 1 FROM (SELECT 1) o, pg_class;", []string{"relation pg_class"}},
		{"DML targets", "INSERT INTO t VALUES (1); UPDATE ONLY u SET a = 1; DELETE FROM v USING w;",
			[]string{"relation t", "relation u", "relation v", "relation w"}},
		{"FROM in function arguments", "SELECT EXTRACT(epoch FROM t), substring(a FROM 1), TRIM(LEADING FROM a);", nil},
		{"DDL", `CREATE SEQUENCE s; COMMENT ON SEQUENCE "public".s IS 'x'; GRANT USAGE ON SEQUENCE s TO PUBLIC; GRANT SELECT ON t TO PUBLIC; DROP SEQUENCE IF EXISTS "public".s;`,
			[]string{"relation s", "relation s", "relation t"}},
		{"DDL naming unqualified relations", `DROP TABLE IF EXISTS t, "public".u; COMMENT ON SEQUENCE s IS 'x'; CREATE SEQUENCE "public".q OWNED BY v.c;`,
			[]string{"relation t", "relation s", "relation v"}},
	})
}

func TestStrings(t *testing.T) {
	runCases(t, []checkCase{
		{"regclass casts", `SELECT 'seq'::pg_catalog.regclass, '"public".seq'::pg_catalog.regclass, 'pg_catalog.pg_class'::pg_catalog.regclass, E'ids.seq'::regclass, CAST('t' AS pg_catalog.regclass);`,
			[]string{"string 'seq'", "type regclass", "string 't'"}},
		{"other reg types", `SELECT 'f'::pg_catalog.regproc, 'text'::pg_catalog.regtype, 'integer'::pg_catalog.regtype, '='::pg_catalog.regoper, 'pg_catalog.=(integer, integer)'::pg_catalog.regoperator, '"C"'::pg_catalog.regcollation, 'x'::pg_catalog.regrole, 'x'::pg_catalog.regnamespace;`,
			[]string{"string 'f'", "string 'text'", "string '='", `string '"C"'`}},
		{"regprocedure arguments", `SELECT '"public".f(pg_catalog.text, integer)'::pg_catalog.regprocedure, '"public".f(text)'::pg_catalog.regprocedure, 'f()'::pg_catalog.regprocedure;`,
			[]string{"string '\"public\".f(text)'", "string 'f()'"}},
		{"to_reg functions", `SELECT pg_catalog.to_regprocedure('"public".f()'), pg_catalog.to_regprocedure('f()'), pg_catalog.to_regclass('t'), pg_catalog.to_regtype('pg_catalog.int4');`,
			[]string{"string 'f()'", "string 't'"}},
		{"sequence functions", `SELECT pg_catalog.nextval('"public".s'), pg_catalog.nextval('s'), pg_catalog.setval('s', 1);`,
			[]string{"string 's'", "string 's'"}},
		{"typed literal", `SELECT pg_catalog.regclass 's', pg_catalog.regclass '"public".s';`, []string{"string 's'"}},
		{"PL/pgSQL declaration", `DO $$ DECLARE a pg_catalog.regclass := 's'; b CONSTANT pg_catalog.regclass := '"public".s'; BEGIN END $$;`, []string{"string 's'"}},
		{"other strings are data", `SELECT 'seq', pg_catalog.format('s'), 'x'::pg_catalog.text;`, nil},
	})
}

func TestLexing(t *testing.T) {
	runCases(t, []checkCase{
		{"line comment", "-- a < b\nSELECT 1; -- c > d", nil},
		{"nested block comment", "/* a < b /* nested > */ still = */ SELECT 1;", nil},
		{"strings are data", `SELECT 'a < b', 'it''s < x', E'\' < ', B'01', X'ff', U&'d\0061t+ta', N'x';`, nil},
		{"E string backslash", `SELECT E'\\' < 1;`, []string{"operator <"}},
		{"quoted identifier", `SELECT "a<b", "x""y" FROM pg_catalog.pg_class;`, nil},
		{"identifiers with $", "SELECT a$b FROM pg_catalog.pg_class WHERE x$ IS NULL;", nil},
		{"a $ in an identifier starts no dollar quote", "SELECT a$b$ < 1;", []string{"operator <"}},
		{"parameters", "SELECT $1 < $2;", []string{"operator <"}},
		{"numbers", "SELECT 1.5e-3, .5, 1e+10, 0x1F, 1_000;", nil},
		{"comment in dollar body", "DO $$ BEGIN -- a < b\n NULL; /* c > d */ END $$;", nil},
		{"dollar body", `CREATE FUNCTION "public".f() RETURNS integer LANGUAGE sql AS $fn$ SELECT 1 + 1 $fn$;`, []string{"operator +"}},
		{"quoted body", `CREATE FUNCTION "public".f() RETURNS integer LANGUAGE sql AS 'SELECT ''a'' || ''b''';`, []string{"operator ||"}},
		{"E body", `CREATE FUNCTION "public".f() RETURNS integer LANGUAGE sql AS E'SELECT\n1 + 1 || \'a\\\\b\'';`, []string{"operator +", "operator ||"}},
		{"C body is not read", `CREATE FUNCTION "public".f() RETURNS integer LANGUAGE c AS 'a<b', 'c>d';`, nil},
		{"other languages are not read", `CREATE FUNCTION "public".f() RETURNS integer LANGUAGE plpython3u AS $$ return 1 < 2 $$; DO LANGUAGE plperl $$ 1 < 2 $$;`, nil},
		{"comment text", `COMMENT ON FUNCTION "public".f() IS $c$ a < b $c$;`, nil},
		{"nested dollar quotes", "DO $do$ BEGIN EXECUTE $x$ SELECT 1 + $y$ 2 - 3 $y$ $x$; END $do$;", []string{"operator +", "operator -"}},
		{"EXECUTE string", "DO $$ BEGIN EXECUTE 'SELECT 1 + 1'; EXECUTE format('SELECT %s < 1', 2); RAISE NOTICE 'x < y'; END $$;",
			[]string{"operator +", "function format", "operator <"}},
		{"format message is data", "DO $$ BEGIN RAISE EXCEPTION USING MESSAGE = pg_catalog.format('a < %s', 1); END $$;", nil},
		{"unterminated string", "SELECT 1 < 2, 'abc", []string{"parse 'abc"}},
		{"unterminated dollar", "SELECT 1 < 2, $x$ abc", []string{"parse $x$ abc"}},
		{"unterminated comment", "SELECT 1 < 2 /* abc", []string{"parse /* abc"}},
		{"PL/pgSQL the parser rejects", "DO $$ BEGIN IF 1 < 2 THEN END $$;", []string{"parse BEGIN IF"}},
		{"not UTF-8", "SELECT 1 < 2, 'a\xffb';", []string{`parse "\xffb';"`}},
		{"not UTF-8 in PL/pgSQL", "DO $$ BEGIN PERFORM 'a\xfe' = 'b'; END $$;", []string{`parse "\xfe' ="`}},
		{"a name format() fills in alone", "DO $$ BEGIN EXECUTE pg_catalog.format('CREATE FUNCTION %I() RETURNS integer LANGUAGE sql AS ''SELECT 1''', 'f'); END $$;",
			[]string{"function __"}},
		{"a schema format() fills in", "DO $$ BEGIN EXECUTE pg_catalog.format('CREATE FUNCTION %I.f() RETURNS integer LANGUAGE sql AS ''SELECT 1''', 'ids'); END $$;", nil},
	})
}

// The example of the brief: a format() string that is itself a function
// definition, inside a PL/pgSQL body.
func TestNestedFormatDDL(t *testing.T) {
	SkipUnsupported(t)
	sql := `CREATE OR REPLACE FUNCTION "public".set_node(d integer)
RETURNS void
LANGUAGE plpgsql
AS $fn$
BEGIN
    EXECUTE pg_catalog.format($ddl$
CREATE OR REPLACE FUNCTION "public".node_bits()
RETURNS bigint
LANGUAGE sql STABLE
AS 'SELECT %s::bigint + 1::text'
$ddl$, d);
END
$fn$;
`
	got := Check([]byte(sql), own)
	want := []struct {
		line, col int
		s         string
	}{{2, 9, "type void"}, {10, 23, "operator +"}, {10, 28, "type text"}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i, w := range want {
		if got[i].Line != w.line || got[i].Col != w.col || string(got[i].Rule)+" "+got[i].Text != w.s {
			t.Errorf("finding %d: got %v, want %d:%d %s", i, got[i], w.line, w.col, w.s)
		}
	}
}

func TestPositions(t *testing.T) {
	SkipUnsupported(t)
	sql := "SELECT 1\n  + 2;\n" + // + at 2:3, offset 11
		"DO $$\nDECLARE x pg_catalog.timestamptz;\nBEGIN\n\tx := now();\nEND $$;\n" + // now at 6:7 (a tab is one byte)
		`CREATE FUNCTION "public".f() RETURNS integer LANGUAGE sql AS 'SELECT ''é'' || 1';` + "\n" + // || at 8:77 (é is two bytes)
		"DO $$ BEGIN\n  perform\n    1 < 2; Perform 3 > 4;\nEND $$;\n" // < at 11:7, > at 11:22 (PERFORM in any case, a line break after it)
	got := Check([]byte(sql), own)
	want := [][3]int{{2, 3, 11}, {6, 7, 0}, {8, 77, 0}, {11, 7, 0}, {11, 22, 0}}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i, w := range want {
		if got[i].Line != w[0] || got[i].Col != w[1] {
			t.Errorf("finding %d at %d:%d, want %d:%d", i, got[i].Line, got[i].Col, w[0], w[1])
		}
		if w[2] != 0 && got[i].Offset != w[2] {
			t.Errorf("finding %d at offset %d, want %d", i, got[i].Offset, w[2])
		}
		if !strings.HasPrefix(sql[got[i].Offset:], got[i].Text) {
			t.Errorf("finding %d: offset %d does not point at %q", i, got[i].Offset, got[i].Text)
		}
	}
}

func TestOwnSchemas(t *testing.T) {
	SkipUnsupported(t)
	sql := []byte(`SELECT "public".f(), public.g(), "Mixed".h(), "ids".i();`)
	for _, tc := range []struct {
		own  []string
		want int
	}{
		{nil, 4},
		{[]string{"public"}, 2},
		{[]string{`"public"`, `"Mixed"`}, 1},
		{[]string{"PUBLIC", "mixed", "ids"}, 1},
	} {
		if got := Check(sql, Options{OwnSchemas: tc.own}); len(got) != tc.want {
			t.Errorf("OwnSchemas %q: %d findings %v, want %d", tc.own, len(got), got, tc.want)
		}
	}
}

func TestFindingString(t *testing.T) {
	SkipUnsupported(t)
	got := Check([]byte("SELECT\n  1 < 2;"), Options{})
	if len(got) != 1 || got[0].String() != "2:5: operator: <: operator < is looked up through search_path; write OPERATOR(pg_catalog.<)" {
		t.Errorf("got %v", got)
	}
}

// Package sqlcheck finds the places in generated SQL where a name could
// resolve through the caller's search_path: unqualified operators, function
// calls and type names, and syntax that looks operators up by name. It is
// for tests only.
//
// PostgreSQL resolves an unqualified name by walking search_path, which the
// caller controls. pg_catalog is searched first only when search_path does
// not list it: a caller who sets search_path = evil, pg_catalog gets
// evil.= for every unqualified =, evil.nextval for nextval(), evil.text for
// ::text. A function body in LANGUAGE sql or plpgsql is parsed when it is
// called, so it sees the caller's search_path unless the function has a SET
// search_path clause. Check reports every such lookup it can see; SQL that
// passes names every operator, function, type, collation and relation with
// pg_catalog or one of Options.OwnSchemas, and avoids the syntax that
// cannot.
//
// # How it reads SQL
//
// Check parses with PostgreSQL's own parsers (libpg_query through
// github.com/pganalyze/pg_query_go, which needs cgo: see Supported) and
// walks the parse tree. Comments, goose's -- +goose annotations included,
// are the parser's. Besides the statements themselves it parses, as code:
// the body of CREATE FUNCTION and DO in LANGUAGE sql (as SQL) or plpgsql
// (with the PL/pgSQL parser, then each expression and statement in it as
// SQL); the string constant that PL/pgSQL's EXECUTE (or FOR ... IN EXECUTE,
// OPEN ... FOR EXECUTE, RETURN QUERY EXECUTE) runs, and the first argument
// of a format() it runs, where %s, %I and %L (%1$I, %-10L) are names
// written as underscores (a name with one is taken as qualified) or, where
// the SQL does not parse with one, blanks, and %% is the operator %; and
// any other dollar-quoted constant that parses as a statement, an
// expression or the rest of one (it may be run later), but for a typed
// literal's. Bodies in other languages are not read. SQL that does not
// parse is a finding under RuleParse.
//
// # Rules
//
//   - operator: every operator must be written OPERATOR(pg_catalog.op)
//     (the grammar folds a - before a numeric constant into it).
//   - syntax: constructs that look an operator up by name, whatever the
//     operands: IS [NOT] DISTINCT FROM, [NOT] BETWEEN, [NOT] IN, op
//     ANY/ALL/SOME with an unqualified op, [NOT] LIKE, ILIKE, SIMILAR TO,
//     NULLIF, the simple CASE x WHEN v (in SQL and as a PL/pgSQL
//     statement), NATURAL JOIN and JOIN ... USING.
//   - function: a call must be qualified, unless the grammar itself maps it
//     to pg_catalog (EXTRACT, TRIM, SUBSTRING(a FROM b)...) or to an
//     expression (COALESCE, GREATEST...). A function that CREATE FUNCTION
//     creates must be qualified with an own schema; one that DROP, COMMENT
//     ON, GRANT, ALTER or CREATE TRIGGER names, with pg_catalog or one.
//   - type: every type name must be qualified or a keyword type that the
//     grammar maps to pg_catalog (int, bigint, boolean, double precision,
//     timestamp with time zone...; not json, a name before PostgreSQL 16).
//     PL/pgSQL declarations count; x%TYPE of a variable is fine,
//     tbl.col%TYPE needs a schema.
//   - collation: COLLATE name needs a schema.
//   - relation: the tables, sequences and views that statements name
//     (FROM, JOIN, INSERT, UPDATE, DELETE, LOCK, REFERENCES, CREATE, DROP,
//     COMMENT ON, GRANT, OWNED BY) must be qualified, but for WITH's names.
//   - string: a string constant read as a name resolves it at run time: the
//     input of regclass, regproc, regprocedure, regoper, regoperator,
//     regtype, regconfig, regdictionary and regcollation (a cast, a typed
//     literal, a PL/pgSQL variable's default), and the first argument of
//     to_regclass() and its kin, nextval(), currval(), setval() and
//     pg_sequence_last_value(). Its name, and a signature's argument types,
//     must be qualified as above.
//
// A name qualified with a schema that is neither pg_catalog nor in
// Options.OwnSchemas is reported under its rule too.
//
// # Limits
//
// The parse tree knows no types: a name in a string is seen only where the
// string itself meets one of the reg* types or functions above. Only the
// DDL named above is checked. PL/pgSQL expressions are found in the body
// by their text from their statement's line on. pg_query's PL/pgSQL
// parser knows a record's fields only for a variable declared with the
// unqualified record, so r.f := v of a pg_catalog.record r does not parse.
package sqlcheck

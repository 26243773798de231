// Package sqlcheck finds, for tests, the places in generated SQL where a
// name could resolve through the caller's search_path, which the caller
// controls: with search_path = evil, pg_catalog an unqualified = is evil.=,
// nextval() evil.nextval, ::text evil.text, in the SQL and in the bodies of
// SQL and PL/pgSQL functions that lack SET search_path. SQL that passes
// Check names every operator, function, type, collation and relation with
// pg_catalog or one of Options.OwnSchemas, and avoids syntax that cannot.
//
// Check walks the trees of PostgreSQL's own parsers (libpg_query through
// pg_query_go, which needs cgo: see Supported); SQL they reject is a
// finding under RuleParse. Comments (goose's annotations too) are not code.
// Code is also: the body of CREATE FUNCTION or DO in sql or plpgsql (its
// expressions and statements parsed one by one); the string constant that
// PL/pgSQL's EXECUTE runs, and the first argument of a format() it runs,
// where %s, %I and %L are names of underscores (a name with one counts as
// qualified; blanks where a name does not parse) and %% is the operator %;
// and any other dollar-quoted constant that parses as a statement or an
// expression (or its rest), but a typed literal's.
//
// The rules, one for each kind of Finding:
//   - operator: an operator must be OPERATOR(pg_catalog.op).
//   - syntax: constructs that look an operator up whatever the operands:
//     IS [NOT] DISTINCT FROM, BETWEEN, IN, op ANY/ALL with an unqualified
//     op, LIKE, ILIKE, SIMILAR TO, NULLIF, the simple CASE x WHEN v (in SQL
//     or PL/pgSQL), NATURAL JOIN and JOIN ... USING.
//   - function: a call must be qualified unless the grammar makes it
//     pg_catalog's (EXTRACT, TRIM...) or an expression (COALESCE...); so
//     must the functions that DROP, COMMENT ON, GRANT, ALTER and CREATE
//     TRIGGER name, and CREATE FUNCTION's with an own schema.
//   - type: a type must be qualified or a keyword type the grammar maps to
//     pg_catalog (int, boolean, double precision...; json only from
//     PostgreSQL 16 on, so not json), PL/pgSQL declarations included;
//     x%TYPE of a variable is fine, tbl.col%TYPE needs a schema.
//   - collation: COLLATE name needs a schema.
//   - relation: a table, sequence or view that a statement names needs
//     one, but for WITH's names.
//   - string: a string read as a name at run time needs one too (and a
//     signature's types): the input of regclass, regproc, regprocedure,
//     regoper, regoperator, regtype, regconfig, regdictionary and
//     regcollation (a cast, a typed literal, a PL/pgSQL variable's
//     default), and the first argument of the to_reg*() functions,
//     nextval(), currval(), setval() and pg_sequence_last_value().
//
// A schema that is neither pg_catalog nor an own schema is reported too.
//
// Limits: the tree knows no types, so a name in a string is seen only where
// the string meets a reg* type or function above; other DDL (CREATE
// OPERATOR, CAST...) is not checked; PL/pgSQL expressions are found in the
// body by their text from their statement's line on; pg_query's PL/pgSQL
// parser knows the fields of an unqualified record only.
package sqlcheck

// Package sqlcheck finds, for tests, where generated SQL names something
// through the caller's search_path (with search_path = evil, pg_catalog an
// unqualified = is evil.=, ::text evil.text), in the SQL and in the SQL and
// PL/pgSQL function bodies, which run with the caller's search_path.
//
// Check walks the trees of PostgreSQL's parsers (pg_query_go, with cgo:
// see Supported); what they reject is a RuleParse finding. Read as code are
// also the bodies of CREATE FUNCTION and DO in sql or plpgsql, the string
// constant or format() string that PL/pgSQL's EXECUTE runs (%s, %I and %L
// count as qualified names, %% as the operator %), and any dollar-quoted
// constant that parses as SQL or an expression but a typed literal's.
//
// The rules, one for each kind of Finding:
//   - operator: an operator must be OPERATOR(pg_catalog.op).
//   - syntax: no IS [NOT] DISTINCT FROM, BETWEEN, IN, op ANY/ALL with an
//     unqualified op, LIKE, ILIKE, SIMILAR TO, NULLIF, simple CASE x WHEN v
//     (in SQL and PL/pgSQL), NATURAL JOIN or JOIN ... USING: they look
//     operators up whatever the operands.
//   - function: a call must be qualified unless the grammar makes it
//     pg_catalog's (EXTRACT, TRIM...) or an expression (COALESCE...); so
//     must what DROP, COMMENT ON, GRANT, ALTER and CREATE TRIGGER name, and
//     CREATE FUNCTION's name, with an own schema.
//   - type: a type must be qualified or a keyword type (int, double
//     precision...; json is one from PostgreSQL 16 only), PL/pgSQL's
//     declarations too (tbl.col%TYPE needs a schema, var%TYPE nothing).
//   - collation, relation: COLLATE's name and the tables, sequences and
//     views statements name (but WITH's) need a schema.
//   - string: so does a string read as a name: the input of the reg* types
//     (regclass, regproc...; cast, typed literal, PL/pgSQL default) and the
//     first argument of to_reg*(), nextval(), currval(), setval() and
//     pg_sequence_last_value(), a signature's types included.
//
// A schema that is neither pg_catalog nor in Options.OwnSchemas is reported
// too. Limits: the tree has no types, so a name in a string is seen only
// where the string meets one of the above; other DDL (CREATE OPERATOR,
// CAST...) is not checked; PL/pgSQL expressions are found in the body by
// their text from their statement's line on; pg_query's PL/pgSQL parser
// knows the fields of an unqualified record only.
package sqlcheck

// Package sqlcheck finds the places in generated SQL where a name could
// resolve through the caller's search_path: unqualified operators, function
// calls and type names, and syntax that looks operators up by name.
//
// PostgreSQL resolves an unqualified name by walking search_path, which the
// caller controls. pg_catalog is searched first only when search_path does
// not list it: a caller who sets search_path = evil, pg_catalog gets
// evil.= for every unqualified =, evil.nextval for nextval(), evil.text for
// ::text. A function body in LANGUAGE sql or plpgsql is parsed when it is
// called, or (for plpgsql) first called in a session, so it sees the
// caller's search_path unless the function has a SET search_path clause.
// Check reports every such lookup it can see; SQL that passes it names
// every operator, function, type, collation and relation with pg_catalog
// or one of Options.OwnSchemas, and avoids the syntax that cannot.
//
// # What is read as code
//
// Check reads the SQL the way PostgreSQL's lexer does: -- and nested /* */
// comments, '...' strings (a doubled quote escapes a quote), E'...' strings
// with backslash escapes, B'...', X'...', N'...' and U&'...' strings,
// "quoted identifiers" (which are never keywords), numbers, $1 parameters,
// the :: cast, PL/pgSQL's := and .., and operators cut as scan.l cuts them
// (a=-1 is = then -).
// Dollar-quoted strings ($$...$$, $fn$...$fn$) are code, wherever they are
// and however deeply nested, except the text of COMMENT ... IS and of a
// typed literal. A '...' string is data, except when it is the body of
// CREATE FUNCTION or DO, the statement of PL/pgSQL's EXECUTE, or the first
// argument of a format() that EXECUTE runs. Inside the first argument of
// format(), %s, %I, %L and %1$s are placeholders (values, not operators) and
// %% is the operator %. A body is read as SQL or PL/pgSQL by its LANGUAGE;
// bodies in other languages are not checked.
//
// # Rules
//
// Each Finding has a Rule:
//
//   - operator: every operator (a run of + - * / < > = ~ ! @ # % ^ & | ` ?)
//     must be written OPERATOR(pg_catalog.op). Not operators: :: and := and
//     => (named arguments); the * of SELECT *, t.* and count(*); the = of
//     SET name = value (in SET, and in CREATE FUNCTION's SET clause), of
//     UPDATE ... SET col = expr, of PL/pgSQL's assignment (x = 1 like
//     x := 1), of DECLARE x int = 1, of a parameter's = default, of RAISE
//     ... USING ERRCODE = ..., MESSAGE = ..., of GET DIAGNOSTICS and of DDL
//     option lists WITH (name = value); PL/pgSQL's %TYPE, <<label>> and
//     #option; format() placeholders; and a - directly before a numeric
//     constant (the grammar folds -1 into the constant, but not -x, - 1::int
//     or +1).
//
//   - syntax: constructs that look an operator up by name, so that even
//     qualified operands do not help: IS [NOT] DISTINCT FROM (=), [NOT]
//     BETWEEN (>= and <=; not the BETWEEN of a window frame), [NOT] IN (...)
//     (= or <>), an unqualified operator before ANY/ALL/SOME (...) (written
//     op ANY: OPERATOR(pg_catalog.=) ANY (...) is fine), [NOT] LIKE, [NOT]
//     ILIKE, [NOT] SIMILAR TO, NULLIF(, the simple CASE x WHEN v (also as a
//     PL/pgSQL statement; the searched CASE WHEN is fine), NATURAL JOIN and
//     JOIN ... USING (...).
//
//   - function: name( must be qualified, pg_catalog.name( or
//     own_schema.name(, unless the grammar makes it syntax: reserved and
//     column-name keywords (COALESCE, GREATEST, LEAST, CAST, EXTRACT,
//     POSITION, TRIM, NORMALIZE, ROW, ARRAY, EXISTS, VALUES, XML...), which
//     PostgreSQL maps to pg_catalog or to expression nodes; SUBSTRING and
//     OVERLAY only in their FROM/FOR/PLACING forms (substring(a, 1, 2) is an
//     ordinary call); an alias's or a CTE's column list; words such as
//     OVER, FILTER and PL/pgSQL's RETURN before (. The functions that DDL
//     creates or names (CREATE FUNCTION, COMMENT ON FUNCTION, DROP, GRANT,
//     ALTER, CREATE TRIGGER ... EXECUTE FUNCTION) must be qualified with an
//     own schema (pg_catalog is accepted where a function is named, not
//     created).
//
//   - type: after ::, in CAST(x AS type), in a PL/pgSQL declaration, in a
//     parameter, RETURNS, RETURNS TABLE, CREATE SEQUENCE ... AS, a column
//     definition, a function signature, and before the string of a typed
//     literal (timestamptz '...', regclass '...'), a type must be qualified
//     or one of the keyword types that the grammar itself maps to
//     pg_catalog: int, integer, smallint, bigint, real, float, double
//     precision, decimal, dec, numeric, boolean, bit [varying], character,
//     char, varchar, national character, nchar [varying], timestamp and time
//     [with|without time zone], interval. Everything else, bool, text,
//     timestamptz, regclass, void, record and trigger included, is a lookup
//     (evil.record and evil.void can be created, and RETURNS record then
//     returns evil.record): write pg_catalog.text, pg_catalog.void. A
//     PL/pgSQL x%TYPE of a variable is fine; tbl.col%TYPE needs a schema.
//
//   - collation: COLLATE name needs a schema (pg_catalog."C").
//
//   - relation: the tables, sequences and views that FROM and JOIN items,
//     INSERT INTO, UPDATE, DELETE FROM, LOCK, REFERENCES, and DDL (CREATE,
//     COMMENT ON, GRANT ... ON, DROP, ALTER) name must be qualified; names
//     a WITH defines are fine.
//
//   - string: a string constant that PostgreSQL reads as a name resolves
//     it through search_path too, at run time: the input of regclass,
//     regproc, regprocedure, regoper, regoperator, regtype, regconfig,
//     regdictionary and regcollation ('seq'::pg_catalog.regclass, CAST(...
//     AS ...), regclass 'seq', a PL/pgSQL variable of such a type
//     initialized with a constant), and the first argument of to_regclass(),
//     to_regproc(), to_regprocedure(), to_regoper(), to_regoperator(),
//     to_regtype(), to_regcollation(), nextval(), currval(), setval() and
//     pg_sequence_last_value(). The name must be qualified, and so must the
//     argument types of a regprocedure or regoperator:
//     '"public".f(pg_catalog.text)'.
//
// A name qualified with a schema that is neither pg_catalog nor in
// Options.OwnSchemas is reported under its rule too.
//
// Not reported, because they look nothing up by name (each checked
// against PostgreSQL 15 with a hostile schema first on search_path):
// OVERLAPS, which the grammar turns into pg_catalog.overlaps(); GREATEST,
// LEAST, DISTINCT, GROUP BY, ORDER BY and UNION, which use the type's
// default btree operator class; AT TIME ZONE, POSITION, TRIM, EXTRACT and
// the FROM/FOR/PLACING forms of SUBSTRING and OVERLAY, which the grammar
// maps to pg_catalog functions; OPERATOR(pg_catalog.=) ANY (...); and
// PL/pgSQL's x = 1 assignment.
//
// # Limits
//
// Check is not a parser: it reads tokens with enough context for the
// constructs above, and is tuned to find no false positives in the SQL
// sfgen generates. It does not know the types of expressions, so it sees
// a name in a string only where the string itself meets the reg* type or
// function above, not when it gets there through a column, a variable
// assigned later or an array (to_regprocedure(k.signature) FROM
// unnest(ARRAY['f()'])), nor through a function not listed above that
// takes a regclass. DDL other than the statements named above (CREATE
// OPERATOR, CAST, INDEX operator classes, MERGE, ...) is not checked, and
// dollar-quoted data is read as code.
package sqlcheck

// Package sqlgen renders the SQL and PL/pgSQL that compose, decompose and
// generate Snowflake IDs inside PostgreSQL, from the same
// [snowflake.Layout] value the Go composer uses.
//
// The SQL comes in releases (see CHANGELOG.md), and this package renders
// the latest, from one tree of text/template files embedded in the
// binary (templates/). Its Up installs into a schema without sfgen and
// upgrades a schema at any earlier release in place, node and state kept,
// so every route renders the same Up: [Script], the plain script, one
// transaction that can run again; [Migration], the goose migration that
// installs it, whose Down removes it; [Upgrade], the goose migration that
// takes an earlier release to it, whose Down refuses (docs/releases.md).
// [Preflight] renders the checks an install makes before it changes
// anything, [FirstNode] the node a first install gets, [Generator] and
// [NextIDExpression] the SQL generator alone.
//
// Released releases never change: package migrations pins the bytes of
// their files, and package released (tests only) renders releases 1 to 7
// from their frozen templates, for tests that need a database at an older
// release.
//
// The only values that reach the templates are numbers derived from the
// layout, the node numbers, and a schema name that pgident.ValidateSchema
// has checked and that is always written as a quoted identifier; nothing
// a user types is pasted into SQL as text. Every operator, function and
// type is bound to pg_catalog or to sfgen's own schema (internal/sqlcheck
// checks the rendered text).
package sqlgen

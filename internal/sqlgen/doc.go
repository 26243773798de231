// Package sqlgen renders the SQL and PL/pgSQL that compose, decompose and
// generate Snowflake IDs inside PostgreSQL, from the same
// [snowflake.Layout] value the Go composer uses.
//
// The SQL comes in releases (see CHANGELOG.md). Each release's
// text/template files are embedded in the binary under
// templates/release<N>; a released release's templates never change (a
// test in package migrations pins the bytes of its migration). The only
// values that reach the templates are numbers derived from the layout,
// the node numbers, and a schema name that pgident.ValidateSchema has
// checked and that is always written as a quoted identifier; nothing a user types
// is pasted into SQL as text. Every operator, function and type in the
// latest release is bound to pg_catalog or to sfgen's own schema
// (internal/sqlcheck checks the rendered text).
//
// [Script] renders the plain install script of the latest release, which
// also upgrades an earlier install in place and can run again;
// [ScriptAt] renders an earlier release's. [Migrations] renders the
// release line as goose files, one a release, each upgrading the one
// before ([Upgrade]); [Migration] renders one goose file that installs the
// latest release into an application's directory. [Preflight] renders the
// checks an install makes before it changes anything.
package sqlgen

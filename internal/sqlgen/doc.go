// Package sqlgen renders the PL/pgSQL that composes, decomposes and
// generates Snowflake IDs inside PostgreSQL, from the same
// [snowflake.Layout] value the Go composer uses.
//
// The SQL comes from text/template files embedded in the binary. The only
// values that reach the templates are numbers derived from the layout, the
// node numbers, and a schema name that [ValidateSchema] has checked and
// that is always written as a quoted identifier; nothing a user types is
// pasted into SQL as text.
//
// [Script] renders a plain install script (sql/snowflake.sql), safe to run
// again on the same database; [Migration] renders the same statements as a
// goose migration, with an Up and a Down section.
package sqlgen

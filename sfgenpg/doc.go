// Package sfgenpg installs sfgen's SQL into PostgreSQL, checks it, and
// leases nodes: the database side of package sfgen, whose IDs, layouts
// and generators it uses.
//
// An application installs and upgrades that SQL itself with [Install]
// (what `sfgen install` does, into any schema, for any layout), or with
// [GooseMigration] as one step of its own goose Provider, and checks at
// startup with [Check] that the database holds this module's [Release]
// for its layout, with a node. [DBError] turns the errors sfgen's SQL
// raises (no node set, a value out of range, ...) into sentinels: this
// package's, and sfgen.ErrOutOfRange. Every database and schema that
// makes IDs needs a node of its own: a first install takes the one given,
// or leaves none, and snowflake_next_id() then refuses ([ErrNoNode])
// until one is set. [TakeLease] borrows a free node from the database for
// as long as the process renews it, and makes IDs with it.
// [RegisterPgxTypes] lets a pgx connection read and write IDs without
// database/sql's Scanner and Valuer, which it otherwise uses.
package sfgenpg

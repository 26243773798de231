// Package catalog names and reads what sfgen keeps in a PostgreSQL schema.
//
// A [Schema] is a schema name checked once and quoted in one place; a
// [Target] is what a command or call works on, a Schema and a layout,
// neither of them zero. [Inspect] reads, from the system catalogs and
// sfgen's own functions, what a schema holds: the release and layout, the
// functions an older release's plain script put back (stale), the node or
// its absence, and which generator makes IDs (SQL, or native and its
// library). Every part of sfgen that asks what a schema holds asks it
// here, through one [Querier]: a pgx handle through [PGX], a database/sql
// one through [DB]. The fleet check of 'sfgen node' is here too:
// [ReadDatabase] reads each schema of a database and which server and
// database it is, and [CompareFleet] finds the targets that share a node
// in one layout, with the same schema reached twice said once. The
// package imports nothing but the standard library and sfgen's own leaf
// packages, so that the root package can use it.
package catalog

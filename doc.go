// Package sfgen composes, decomposes and generates Snowflake IDs, and
// stores them in PostgreSQL bigint columns, bit for bit as the SQL that
// sfgen renders for PostgreSQL does.
//
// A Snowflake ID is a positive 64-bit integer that sorts by time. Many
// machines can make IDs at once without asking each other, because each
// puts its own node (a datacenter and a machine number) in its IDs. In the
// Twitter layout, the default, an ID's bits are, from the most
// significant:
//
//	bit 63       0 (the ID is always positive)
//	bits 62..22  41 bits: timestamp, milliseconds since 2010-11-04T01:42:54.657Z
//	bits 21..17  5 bits:  datacenter, 0 to 31
//	bits 16..12  5 bits:  machine (Twitter's "worker id"), 0 to 31
//	bits 11..0   12 bits: sequence, 0 to 4095, within one millisecond
//
// so
//
//	id = (t - 1288834974657)<<22 | datacenter<<17 | machine<<12 | sequence
//
// for t from 1288834974657 to 3487858230208 Unix milliseconds
// (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z) inclusive. Every
// non-negative int64 is a valid ID. A value outside its range is an
// error, a *RangeError wrapping ErrOutOfRange, never an ID wrapped or
// truncated into another.
//
// # Layouts
//
// A [Layout] is an epoch and the widths of the four fields; every shift,
// mask and limit derives from it. The package-level [Compose],
// [Decompose], [NewGenerator], [FirstID] and [LastID] use [Twitter]; the
// Layout methods of the same names use their layout. [Discord] has
// Discord's epoch, 2015-01-01T00:00:00Z, and Twitter's widths.
// [NewLayout] makes any other layout that both this package and sfgen's
// SQL can represent, and [ParseLayout] reads a preset's name or the spec
// that [Layout.String] and the SQL function snowflake_layout() print:
//
//	epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12
//
// The zero Layout is no layout: everything that would compose, decompose
// or generate IDs with it returns an error wrapping [ErrZeroLayout].
//
// # Generating IDs
//
// A [Generator] issues strictly increasing IDs for one node, from any
// number of goroutines, at up to 2^sequence bits IDs a millisecond (4096 in
// the Twitter layout); every running generator needs its own node.
//
// # Databases, JSON and text
//
// An [ID] is stored as a bigint: it is a database/sql Scanner and driver
// Valuer, which pgx v5 also uses, with database/sql (pgx's stdlib driver
// included) and with pgx directly. A negative value or NULL is not an ID
// and scanning one is an error; a nullable column scans into a [NullID] or
// a *ID. In JSON an ID is a string, because JavaScript numbers lose
// precision above 2^53; it is read from a string or a number. An ID and a
// Layout are encoding.TextMarshalers and TextUnmarshalers, for flags
// (flag.TextVar) and configuration files.
//
// # The SQL side
//
// The sfgen command renders the PL/pgSQL functions snowflake_compose,
// snowflake_decompose, snowflake_timestamp, snowflake_first_id,
// snowflake_last_id and snowflake_next_id from the same Layout values, and
// `sfgen verify` checks on a real database that they and this package give
// the same answers and the same error messages for every input.
//
// Package sfgen imports the standard library alone. Installing that SQL
// into PostgreSQL, checking it at startup, leasing nodes and reading the
// errors sfgen's SQL raises are package
// github.com/sfgen/sfgen/sfgenpg.
package sfgen

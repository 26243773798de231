// Package snowflake composes and decomposes Snowflake IDs, and generates
// them: the one implementation behind the public package sfgen (the
// module's root, a thin face over this one) and the SQL that
// internal/sqlgen renders.
//
// A Snowflake ID is a positive 64-bit integer. In the Twitter layout, the
// default, its bits are, from the most significant:
//
//	bit 63       0 (the ID is always positive)
//	bits 62..22  41 bits: milliseconds since 2010-11-04T01:42:54.657Z
//	bits 21..17  5 bits:  datacenter, 0 to 31
//	bits 16..12  5 bits:  machine (Twitter's "worker id"), 0 to 31
//	bits 11..0   12 bits: sequence, 0 to 4095
//
// so id = (t-1288834974657)<<22 | datacenter<<17 | machine<<12 | sequence.
// Valid timestamps run from 1288834974657 to 3487858230208 Unix milliseconds
// (2080-07-10T17:30:30.208Z) inclusive. A value outside its range is an
// error, never wrapped or truncated into a different ID.
//
// The layout is data: a [Layout] holds the epoch and the field widths, and
// every shift, mask and limit is derived from it. [Twitter] and [Discord]
// are presets; [NewLayout] and [ParseLayout] make any other layout that Go
// and the SQL can both represent, and nothing else. The SQL that sfgen
// renders for PostgreSQL is generated from the same [Layout] value, so the
// database and Go compose the same IDs and reject the same inputs.
//
// What only the command line needs stays here, out of the public API:
// [Layout.Segments] and [Layout.Binary] (the binary breakdown),
// [RangeMessage] (the SQL templates' error messages), [LayoutByName] and
// [PresetNames].
package snowflake

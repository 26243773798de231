// Package verify checks, against a real PostgreSQL, that the functions
// sfgen generated compose, decompose and date the very IDs the Go composer
// does, and reject the very inputs it rejects, with the same words; and
// that snowflake_first_id and snowflake_last_id turn every time into the
// IDs Layout.FirstID and Layout.LastID do, or reject it alike.
//
// [Run] draws seeded random inputs: valid ones over the whole range, ones
// within a few units of every limit, and ones with a single field out of
// range; and random times, to the microsecond: over the layout's range,
// within a microsecond of a whole millisecond, and outside the layout up
// to the ends of timestamptz. It sends them to the database in batches
// (arrays through unnest), compares every answer with Go's, and reports
// each mismatch with its input, both answers and the seed that reproduces
// it. Fixed vectors ([Vectors], [TimeVectors]) run first: every limit,
// each side of it, and ±infinity.
package verify

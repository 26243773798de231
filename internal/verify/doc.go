// Package verify checks, against a real PostgreSQL, that the functions
// sfgen generated compose, decompose and date the very IDs the Go composer
// does, and reject the very inputs it rejects, with the same words.
//
// [Run] draws seeded random inputs: valid ones over the whole range, ones
// within a few units of every limit, and ones with a single field out of
// range. It sends them to the database in batches (arrays through unnest),
// compares every answer with the Go composer's, and reports each mismatch
// with its input, both answers and the seed that reproduces it.
package verify

//go:build !cgo

package sqlcheck

// Supported is false: without cgo there is no parser to check with.
const Supported = false

func check(string, map[string]bool, bool) []Finding {
	panic("internal/sqlcheck needs cgo for PostgreSQL's parser (pg_query_go); call SkipUnsupported first")
}

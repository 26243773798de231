package audit

// SetMinChunkPages sets the size from which Run reads a table in chunks,
// for a test, and returns what puts it back.
func SetMinChunkPages(n int64) (restore func()) {
	old := minChunkPages
	minChunkPages = n
	return func() { minChunkPages = old }
}

// ChunkQuery is chunkQuery, for the tests that check its SQL.
var ChunkQuery = chunkQuery

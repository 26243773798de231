package install

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sfgen/sfgen/internal/pgmajor"
)

// ErrUnsupportedServer: the server's PostgreSQL major is older than sfgen
// supports (pgmajor.Oldest); the error is a *pgmajor.Error.
var ErrUnsupportedServer = pgmajor.ErrUnsupported

// checkServer refuses a server of a major sfgen's SQL cannot run on, first
// of all checks (Apply's and Run's): on PostgreSQL 14 release 1's migration would fail
// at its UNLOGGED sequence.
func checkServer(ctx context.Context, conn interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}) error {
	var num int
	var version string
	if err := conn.QueryRowContext(ctx, "SELECT pg_catalog.current_setting('server_version_num')::pg_catalog.int4, pg_catalog.current_setting('server_version')").Scan(&num, &version); err != nil {
		return fmt.Errorf("read the server's version: %w", err)
	}
	return pgmajor.Check(num, version)
}

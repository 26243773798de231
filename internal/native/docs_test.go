package native_test

import (
	"context"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/native"
)

// docsNative is docs/native.md's Go example, verbatim, so that it compiles
// (the root package's TestDocsGoBlocks checks that it is). It is not run:
// it would build into /usr/local/lib/sfgen; TestInstallOwnerAndUninstall
// and the tests beside it make the same calls in a temporary directory.
func docsNative(ctx context.Context, conn *pgx.Conn) error {
	so, err := native.Build(ctx, "/usr/local/lib/sfgen", snowflake.Twitter()) // make USE_PGXS=1
	if err != nil {
		return err
	}
	if err := native.Install(ctx, conn, "public", so); err != nil { // snowflake_next_id() is now the C function
		return err
	}
	return native.Uninstall(ctx, conn, "public") // and back to the SQL one
}

var _ = docsNative

package verify

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
)

// CheckInstalled is Run's check of what schema holds, for the tests.
func CheckInstalled(ctx context.Context, q catalog.Querier, schema string, l snowflake.Layout) error {
	in, err := inspect(ctx, q, schema)
	if err != nil {
		return err
	}
	return checkInstalled(in, l)
}

// CheckGenerator is Run's generator check of schema, for the tests.
func CheckGenerator(ctx context.Context, pool *pgxpool.Pool, schema string, l snowflake.Layout, conns, perConn, keep int) (*GeneratorReport, error) {
	in, err := inspect(ctx, catalog.PGX(pool), schema)
	if err != nil {
		return nil, err
	}
	return checkGenerator(ctx, pool, in, l, conns, perConn, keep)
}

func inspect(ctx context.Context, q catalog.Querier, schema string) (catalog.Installed, error) {
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		return catalog.Installed{}, err
	}
	return catalog.Inspect(ctx, q, s)
}

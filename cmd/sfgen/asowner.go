package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/pgident"
)

// poolAsOwner returns a pool whose sessions run as the role that owns
// schema's sfgen functions, for a command that calls them (verify): a
// role that connects as another role calls them as that role (SET ROLE
// in every session, as PostgreSQL's own VACUUM and REINDEX act as a
// table's owner), so no role's code runs with privileges it lacks. It
// returns pool itself where the connecting role is the owner or schema
// has no sfgen, and an error naming both roles where the connecting role
// cannot act as the owner.
func (c *cli) poolAsOwner(ctx context.Context, pool *pgxpool.Pool, dsn, schema string) (*pgxpool.Pool, error) {
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		return nil, err
	}
	in, err := catalog.Inspect(ctx, catalog.PGX(pool), s)
	if err != nil || in.Owner == "" || !in.Has(catalog.FuncLayout) {
		return pool, nil // verify reports what it finds
	}
	var me string
	var canAct bool
	// SET ROLE needs membership with the SET option from PostgreSQL 16
	// on (there is no such option before; membership is enough).
	if err := pool.QueryRow(ctx, `SELECT CURRENT_USER::pg_catalog.text,
		pg_catalog.pg_has_role($1::pg_catalog.text::pg_catalog.regrole,
			CASE WHEN pg_catalog.current_setting('server_version_num')::integer OPERATOR(pg_catalog.>=) 160000 THEN 'SET' ELSE 'MEMBER' END)`, in.Owner).Scan(&me, &canAct); err != nil {
		return nil, err
	}
	if me == in.Owner {
		return pool, nil
	}
	if !canAct {
		return nil, fmt.Errorf("schema %s's sfgen functions belong to role %s, and role %s cannot act as it: verify calls them, which would run %s's code with %s's privileges; connect as %s (or as a role that can SET ROLE %s)",
			schema, in.Owner, me, in.Owner, me, in.Owner, in.Owner)
	}
	cfg, err := connect.PoolConfig(dsn)
	if err != nil {
		return nil, err
	}
	setRole := "SET ROLE " + pgident.Quote(in.Owner)
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, setRole)
		return err
	}
	owned, err := connect.NewPool(ctx, cfg, dsn)
	if err != nil {
		return nil, err
	}
	pool.Close()
	fmt.Fprintf(c.stderr, "sfgen %s: connected as role %s; calling schema %s's sfgen functions as their owner, role %s (SET ROLE), so that none runs with privileges its owner lacks\n",
		c.name, me, schema, in.Owner)
	return owned, nil
}

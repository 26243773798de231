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

// ownerToActAs returns the role a command that calls schema's sfgen
// functions (verify, bench) should run as: "" where the connecting role
// owns them or schema has no sfgen, else their owner, which the
// connecting role must be able to SET ROLE to (an error names both roles
// where it cannot). Acting as the owner, as PostgreSQL's own VACUUM and
// REINDEX act as a table's owner, no role's code runs with privileges it
// lacks.
func ownerToActAs(ctx context.Context, q catalog.Querier, schema string) (string, error) {
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		return "", err
	}
	in, err := catalog.Inspect(ctx, q, s)
	if err != nil || in.Owner == "" || !in.Has(catalog.FuncLayout) {
		return "", nil // the command reports what it finds
	}
	var me string
	var canAct bool
	// SET ROLE needs membership with the SET option from PostgreSQL 16
	// on (there is no such option before; membership is enough).
	if err := q.QueryRow(ctx, `SELECT CURRENT_USER::pg_catalog.text,
		pg_catalog.pg_has_role($1::pg_catalog.text::pg_catalog.regrole,
			CASE WHEN pg_catalog.current_setting('server_version_num')::integer OPERATOR(pg_catalog.>=) 160000 THEN 'SET' ELSE 'MEMBER' END)`, in.Owner).Scan(&me, &canAct); err != nil {
		return "", err
	}
	if me == in.Owner {
		return "", nil
	}
	if !canAct {
		return "", fmt.Errorf("schema %s's sfgen functions belong to role %s, and role %s cannot act as it: this command calls them, which would run %s's code with %s's privileges; connect as %s (or as a role that can SET ROLE %s)",
			schema, in.Owner, me, in.Owner, me, in.Owner, in.Owner)
	}
	return in.Owner, nil
}

// actingAs says on stderr that the command runs as role, the owner of
// schema's sfgen functions, rather than as the connecting role.
func (c *cli) actingAs(role, schema string) {
	fmt.Fprintf(c.stderr, "sfgen %s: calling schema %s's sfgen functions as their owner, role %s (SET ROLE), so that none runs with privileges its owner lacks\n",
		c.name, schema, role)
}

// poolAsOwner returns pool, or where the connecting role is not the owner
// of schema's sfgen functions (ownerToActAs) a new pool whose sessions
// SET ROLE to it, closing pool.
func (c *cli) poolAsOwner(ctx context.Context, pool *pgxpool.Pool, dsn, schema string) (*pgxpool.Pool, error) {
	role, err := ownerToActAs(ctx, catalog.PGX(pool), schema)
	if err != nil || role == "" {
		return pool, err
	}
	cfg, err := connect.PoolConfig(dsn)
	if err != nil {
		return nil, err
	}
	setRole := "SET ROLE " + pgident.Quote(role)
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, setRole)
		return err
	}
	owned, err := connect.NewPool(ctx, cfg, dsn)
	if err != nil {
		return nil, err
	}
	pool.Close()
	c.actingAs(role, schema)
	return owned, nil
}

package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/snowflake"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

const nodeHelp = `
sfgen node [--dsn URL] [--schema NAME] [--datacenter N] [--machine N]

Shows or sets the node (datacenter and machine) that snowflake_next_id()
puts in every ID it makes in this database. Give each database that makes
IDs its own node, or their IDs can collide.

Without --datacenter and --machine it prints the current node. With either
or both it sets them (the one not given keeps its value) and prints the old
and the new node. Setting takes effect for every session from its next
transaction on, and needs the privileges of the role that owns sfgen's
functions (the one that installed them); the node is stored in the
database, so no session setting can change it.

Examples:
  sfgen node --dsn postgres://app@localhost/app
  sfgen node --dsn postgres://owner@db1/app --datacenter 1 --machine 4
  DATABASE_URL=postgres://owner@db2/app sfgen node --schema ids --machine 5
`

func runNode(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("node", nodeHelp, stdout, stderr)
	dsnFlag := c.fs.String("dsn", "", dsnHelp)
	schema := c.schemaVar("schema `NAME` that holds sfgen's functions")
	node := c.nodeFlags(snowflake.Twitter, "set the %s to `N`")
	if code, done := c.parseFlags(args); done {
		return code
	}
	db, dsn, code, ok := c.requireDB(ctx, *dsnFlag)
	if !ok {
		return code
	}
	defer db.Close()

	q := pgident.Quote(*schema)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return c.fail("%s", redactErr(err, dsn))
	}
	defer tx.Rollback()
	oldDC, oldM, err := nodeIn(ctx, tx, q)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (pe.Code == "42883" || pe.Code == "3F000") { // undefined_function, invalid_schema_name
			return c.fail("sfgen's snowflake_next_id() is not installed in schema %s; run 'sfgen install' first", *schema)
		}
		return c.fail("read the node: %s", redactErr(err, dsn))
	}
	in, err := install.InstalledRelease(ctx, func(ctx context.Context, q string, args ...any) interface{ Scan(...any) error } {
		return tx.QueryRowContext(ctx, q, args...)
	}, *schema)
	release := in.Release
	if err != nil {
		return c.fail("read the release: %s", redactErr(err, dsn))
	}
	where := fmt.Sprintf("(schema %s, sfgen release %d)", *schema, release)
	if release < sqlgen.Latest {
		fmt.Fprintf(stderr, "sfgen node: schema %s is at sfgen release %d, older than this sfgen's release %d: upgrade it ('sfgen verify' says how)\n", *schema, release, sqlgen.Latest)
	}
	if !node.given() {
		fmt.Fprintf(stdout, "datacenter %d, machine %d %s\n", oldDC, oldM, where)
		return exitOK
	}
	dc, m := node.over(oldDC, oldM)
	if _, err := tx.ExecContext(ctx, "SELECT "+q+".snowflake_set_node($1, $2)", dc, m); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" { // insufficient_privilege
			return c.fail("permission denied: %s; connect as the role that owns sfgen's functions", pe.Message)
		}
		return c.fail("set the node: %s", redactErr(err, dsn))
	}
	if dc, m, err = nodeIn(ctx, tx, q); err != nil {
		return c.fail("read the node back: %s", redactErr(err, dsn))
	}
	if err := tx.Commit(); err != nil {
		return c.fail("commit: %s", redactErr(err, dsn))
	}
	fmt.Fprintf(stdout, "datacenter %d, machine %d -> datacenter %d, machine %d %s\n", oldDC, oldM, dc, m, where)
	return exitOK
}

// nodeIn reads the node of snowflake_next_id() in schema q (quoted).
func nodeIn(ctx context.Context, tx *sql.Tx, q string) (datacenter, machine int64, err error) {
	err = tx.QueryRowContext(ctx, "SELECT datacenter_id, machine_id FROM "+q+".snowflake_node()").Scan(&datacenter, &machine)
	return datacenter, machine, err
}

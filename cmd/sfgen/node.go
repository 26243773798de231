package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sfgen/sfgen/internal/install"
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
	schema := c.fs.String("schema", sqlgen.DefaultSchema, "schema `NAME` that holds sfgen's functions")
	var dcFlag, mFlag intFlag
	c.fs.Var(&dcFlag, "datacenter", "set the datacenter to `N` (0 to 31)")
	c.fs.Var(&mFlag, "machine", "set the machine to `N` (0 to 31)")
	if code, done := c.parseFlags(args); done {
		return code
	}
	if err := sqlgen.ValidateSchema(*schema); err != nil {
		return c.usageError("%v", err)
	}
	l := snowflake.Twitter
	var newDC, newM *int64
	for _, f := range []struct {
		flag *intFlag
		fld  snowflake.Field
		dst  **int64
	}{{&dcFlag, snowflake.FieldDatacenter, &newDC}, {&mFlag, snowflake.FieldMachine, &newM}} {
		if !f.flag.set {
			continue
		}
		v, err := f.flag.node(l, f.fld)
		if err != nil {
			return c.usageError("%v", err)
		}
		*f.dst = &v
	}
	db, dsn, code, ok := c.requireDB(ctx, *dsnFlag)
	if !ok {
		return code
	}
	defer db.Close()

	q := sqlgen.QuoteIdentifier(*schema)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return c.fail("%s", redactErr(err, dsn))
	}
	defer tx.Rollback()
	var oldDC, oldM int64
	if err := tx.QueryRowContext(ctx, "SELECT datacenter_id, machine_id FROM "+q+".snowflake_node()").Scan(&oldDC, &oldM); err != nil {
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
	if newDC == nil && newM == nil {
		fmt.Fprintf(stdout, "datacenter %d, machine %d %s\n", oldDC, oldM, where)
		return exitOK
	}
	dc, m := oldDC, oldM
	if newDC != nil {
		dc = *newDC
	}
	if newM != nil {
		m = *newM
	}
	if _, err := tx.ExecContext(ctx, "SELECT "+q+".snowflake_set_node($1, $2)", dc, m); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" { // insufficient_privilege
			return c.fail("permission denied: %s; connect as the role that owns sfgen's functions", pe.Message)
		}
		return c.fail("set the node: %s", redactErr(err, dsn))
	}
	if err := tx.QueryRowContext(ctx, "SELECT datacenter_id, machine_id FROM "+q+".snowflake_node()").Scan(&dc, &m); err != nil {
		return c.fail("read the node back: %s", redactErr(err, dsn))
	}
	if err := tx.Commit(); err != nil {
		return c.fail("commit: %s", redactErr(err, dsn))
	}
	fmt.Fprintf(stdout, "datacenter %d, machine %d -> datacenter %d, machine %d %s\n", oldDC, oldM, dc, m, where)
	return exitOK
}

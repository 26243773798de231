package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"

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

Without --datacenter and --machine it prints the current node, with the
schema, its sfgen release and the layout it was installed for. With either
or both it sets them, each within the range of the schema's layout (the one not given keeps its value) and prints the old
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
	// The schema's layout sets the ranges, so they are checked once it is
	// read; until then, the widest any layout has (and help says so).
	node := nodeFlags{
		datacenter: c.intVar(snowflake.FieldDatacenter.String(), "", 0, 0, math.MaxInt32),
		machine:    c.intVar(snowflake.FieldMachine.String(), "", 0, 0, math.MaxInt32),
	}
	for _, fld := range []snowflake.Field{snowflake.FieldDatacenter, snowflake.FieldMachine} {
		c.fs.Lookup(fld.String()).Usage = fmt.Sprintf("set the %s to `N` (in the range of the schema's layout: 0 to %d in Twitter's and Discord's)", fld, snowflake.Twitter.Max(fld))
	}
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
	for _, f := range []struct {
		fld  snowflake.Field
		flag *intFlag
	}{{snowflake.FieldDatacenter, node.datacenter}, {snowflake.FieldMachine, node.machine}} {
		if lo, hi := in.Layout.Min(f.fld), in.Layout.Max(f.fld); f.flag.set && (f.flag.Int64() < lo || f.flag.Int64() > hi) {
			return c.usageError("%s in schema %s's layout, %s", snowflake.RangeMessage(f.fld, f.flag.val.String(), lo, hi), *schema, describeLayout(in.Layout))
		}
	}
	where := fmt.Sprintf("(schema %s, sfgen release %d, layout %s)", *schema, release, layoutArg(in.Layout))
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

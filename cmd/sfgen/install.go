package main

import (
	"context"
	"fmt"
	"io"

	"github.com/sfgen/sfgen/internal/install"
)

const installHelp = `
sfgen install [--dsn URL] [--schema NAME] [--datacenter N] [--machine N]

Applies sfgen's release line of goose migrations to a database, over pgx,
and prints what it applied: a new schema gets every release in turn, one
at an older release gets the upgrades it lacks (node, generator state and
column defaults kept). Versions (one per release) are recorded in
NAME.sfgen_db_version, apart from your application's goose_db_version.
Running it again applies nothing. The node flags set the node of
snowflake_next_id() on first install only; use 'sfgen node' to change it
later.

It changes nothing and exits 1 when the schema has objects under sfgen's
names that the connecting role does not own or that sfgen did not create,
belongs to another role, holds sfgen for another layout, or is at a newer
release. Connect as the role that owns sfgen's objects (the one that
installed them) to upgrade.

Examples:
  sfgen install --dsn postgres://app@localhost:5432/app
  DATABASE_URL=postgres://app@localhost/app sfgen install --schema ids --datacenter 1
`

func runInstall(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("install", installHelp, stdout, stderr)
	var sf sqlFlags
	sf.register(c)
	dsnFlag := c.fs.String("dsn", "", dsnHelp)
	if code, done := c.parseFlags(args); done {
		return code
	}
	o := sf.options()
	db, dsn, code, ok := c.requireDB(ctx, *dsnFlag)
	if !ok {
		return code
	}
	defer db.Close()
	res, err := install.Apply(ctx, db, o)
	if err != nil {
		return c.fail("%s", redactErr(err, dsn))
	}
	if len(res.Applied) == 0 {
		fmt.Fprintf(stdout, "nothing to apply: schema %s is at sfgen release %d\n", res.Schema, res.Version)
		if sf.node.given() {
			fmt.Fprintf(stderr, "sfgen install: the node flags apply to a first install only; use 'sfgen node' to change the node\n")
		}
		return exitOK
	}
	for _, name := range res.Applied {
		fmt.Fprintf(stdout, "applied %s\n", name)
	}
	fmt.Fprintf(stdout, "schema %s is at sfgen release %d\n", res.Schema, res.Version)
	return exitOK
}

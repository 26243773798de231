package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/install"
)

const installHelp = `
sfgen install [--dsn URL] [--layout NAME|SPEC] [--schema NAME] [--datacenter N] [--machine N]
              [--native --native-dir DIR | --native=false]

Applies sfgen's release line of goose migrations to a database, over pgx,
and prints what it applied: a new schema gets every release in turn, one
at an older release gets the upgrades it lacks (node, generator state and
column defaults kept). Versions (one per release) are recorded in
NAME.sfgen_db_version, apart from your application's goose_db_version.
Running it again applies nothing. The node flags set the node of
snowflake_next_id() on first install; on a schema that has sfgen already
they must name the node it has (install keeps a schema's node), and any
other node is an error that points to 'sfgen node', which changes it.
Without them, a first install takes the node from the connection's
settings sfgen.datacenter and sfgen.machine (PGOPTIONS='-c
sfgen.datacenter=1 -c sfgen.machine=2', or ALTER DATABASE ... SET), or
else leaves it unset: snowflake_next_id() then refuses to make IDs until
'sfgen node' sets one, so that no database ends up with a node nobody
chose for it.

--layout (Twitter's unless given) is the layout of the IDs the functions
compose; the database records it (snowflake_layout() returns it), and a
schema keeps the layout it was installed with. Give each layout its own
schema: several can live side by side in one database, each with its own
node and generator state.

It changes nothing and exits 1 when the schema has objects under sfgen's
names that the connecting role does not own or that sfgen did not create,
belongs to another role, holds sfgen for another layout, or is at a newer
release. Connect as the role that owns sfgen's objects (the one that
installed them) to upgrade.

The native generator (--native): where the server loads C extensions,
snowflake_next_id() can be C code on the SQL generator's state, with
every guarantee of it and about bigserial's cost (docs/native.md). --native
builds it (PGXS: pg_config, the server's headers, make and a C compiler,
on the database server's machine) into DIR/sfgen-<layout hash>/ (DIR absolute,
kept: the database loads the library from there) and switches the
schema's snowflake_next_id() to it, keeping its OID, so column defaults
follow; it needs a superuser. When it is not available it says why and
the SQL generator stays. --native=false switches back to the SQL
generator. Without the flag, install keeps the generator the schema has:
an upgrade that replaces snowflake_next_id() re-installs the native one
from the library it used.

Examples:
  sfgen install --dsn postgres://app@localhost:5432/app --datacenter 0 --machine 1
  sfgen install --dsn postgres://postgres@localhost/app --native --native-dir /usr/local/lib/sfgen
  sfgen install --dsn postgres://postgres@localhost/app --native=false
  DATABASE_URL=postgres://app@localhost/app sfgen install --schema ids --datacenter 1
  sfgen install --dsn postgres://app@localhost/app --schema discord --layout discord
`

func runInstall(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("install", installHelp, stdout, stderr)
	var sf sqlFlags
	if code, done := sf.register(c, args); done {
		return code
	}
	dsnFlag := c.fs.String("dsn", "", dsnHelp)
	nativeFlag := c.fs.Bool("native", false, "switch snowflake_next_id() to the native (C) generator; =false switches back to SQL")
	nativeDir := c.fs.String("native-dir", "", "with --native: build and keep the library under `DIR` (absolute, on the server's machine)")
	if code, done := c.parseFlags(args); done {
		return code
	}
	o := sf.options()
	want, code, ok := c.generatorFlags(*nativeFlag, *nativeDir, "an absolute directory on the database server's machine, readable by its OS user, where the library is built and kept (the database loads it from there)")
	if !ok {
		return code
	}
	db, dsn, code, ok := c.requireDB(ctx, *dsnFlag)
	if !ok {
		return code
	}
	defer db.Close()
	gen, code, ok := c.prepareGenerator(ctx, dsn, o, want, *nativeDir)
	if !ok {
		return code
	}
	defer gen.close()
	if sf.node.given() {
		if code, ok := c.nodeKept(ctx, db, dsn, o.Schema, sf.node); !ok {
			return code
		}
	}
	res, err := install.Apply(ctx, db, o)
	if errors.Is(err, install.ErrLayoutMismatch) {
		in, ierr := inspect(ctx, db, o.Schema)
		if ierr == nil && !in.Layout.IsZero() {
			return c.fail("schema %s holds sfgen for layout %s, not --layout %s; give --layout %q for this schema, or install into another one",
				o.Schema, describeLayout(in.Layout), describeLayout(o.Layout), layoutArg(in.Layout))
		}
	}
	if err != nil {
		return c.fail("%s", redactErr(err, dsn))
	}
	if len(res.Applied) == 0 {
		fmt.Fprintf(stdout, "nothing to apply: schema %s is at sfgen release %d\n", res.Schema, res.Version)
	} else {
		for _, name := range res.Applied {
			fmt.Fprintf(stdout, "applied %s\n", name)
		}
		fmt.Fprintf(stdout, "schema %s is at sfgen release %d\n", res.Schema, res.Version)
	}
	c.sayNode(ctx, db, res.Schema)
	return c.finishGenerator(ctx, gen, res.Schema, dsn)
}

// sayNode warns on stderr when schema has no node after an install, and
// says how to set one.
func (c *cli) sayNode(ctx context.Context, db *sql.DB, schema string) {
	if in, err := inspect(ctx, db, schema); err == nil && in.Node.State == catalog.NodeUnset {
		fmt.Fprintf(c.stderr, "sfgen install: no node is set, so snowflake_next_id() refuses to make IDs until one is: give this database and schema a node no other maker uses, as the owner: sfgen node --schema %s --datacenter N --machine N (or install with --datacenter and --machine, or with the settings sfgen.datacenter and sfgen.machine)\n", schema)
	}
}

// nodeKept checks, before an install into a schema that already has sfgen,
// that the node flags ask for the node it has: install keeps a schema's
// node, so any other is refused (exit 2) rather than silently not applied.
// A schema without sfgen passes.
func (c *cli) nodeKept(ctx context.Context, db *sql.DB, dsn, schema string, node nodeFlags) (code int, ok bool) {
	in, err := inspect(ctx, db, schema)
	if err != nil {
		return c.fail("read the node of schema %s: %s", schema, redactErr(err, dsn)), false
	}
	dc, m := in.Node.Datacenter, in.Node.Machine
	switch in.Node.State {
	case catalog.NoNodeFunction:
		return exitOK, true
	case catalog.NodeUnset:
		return c.usageError("schema %s already has sfgen, with no node set, and install keeps a schema's node; set it with 'sfgen node --schema %s --datacenter N --machine N'", schema, schema), false
	}
	if wdc, wm := node.over(dc, m); wdc != dc || wm != m {
		return c.usageError("schema %s already has sfgen with node datacenter %d, machine %d, which install keeps; to move it to datacenter %d, machine %d run 'sfgen node --schema %s --datacenter %d --machine %d' (IDs stay unique only if no other database or service makes IDs with that node)",
			schema, dc, m, wdc, wm, schema, wdc, wm), false
	}
	return exitOK, true
}

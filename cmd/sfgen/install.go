package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/pgident"
)

const installHelp = `
sfgen install [--dsn URL] [--layout NAME|SPEC] [--schema NAME] [--datacenter N] [--machine N]
              [--grant ROLE]... [--native [--native-dir DIR] | --native=false]

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

--layout is the layout of the IDs the functions compose: Twitter's for a
new schema unless given; an existing schema's own (snowflake_layout(),
which the database records) when not given, as a schema keeps the layout
it was installed with (a --layout that differs is refused). Node flags are
checked against --layout's ranges, or Twitter's when it is not given. Give each layout its own
schema: several can live side by side in one database, each with its own
node and generator state.

It changes nothing and exits 1 when the schema has objects under sfgen's
names that the connecting role does not own or that sfgen did not create,
belongs to another role, holds sfgen for another layout, or is at a newer
release. Connect as the role that owns sfgen's objects (the one that
installed them) to upgrade.

On Citus (its pg_dist_node is there), install changes the node it connects
to alone, with Citus' DDL propagation off: each Citus node that takes
writes (coordinator and workers) gets its own install and its own node,
which Citus never copies over. Give distributed tables
DEFAULT SCHEMA.snowflake_next_id_local(), which Citus copies to the workers
as it is, where it calls each node's own generator (docs/citus.md).

The native generator (--native): where the server loads C extensions,
snowflake_next_id() can be C code on the SQL generator's state, with
every guarantee of it and about bigserial's cost (docs/native.md). --native
uses the library the server finds by its portable name,
sfgen_native_<layout hash>, along its dynamic_library_path ('sfgen
build-native' puts it in the server's $libdir); --native --native-dir DIR
builds it (PGXS: pg_config, the server's headers, make and a C compiler,
on the database server's machine) into DIR/sfgen-<layout hash>/ (DIR absolute,
kept: the database loads the library from there, or by the portable name
when DIR is in its dynamic_library_path). Either switches the schema's
snowflake_next_id() to it, keeping its OID, so column defaults follow; it
needs a superuser. When it is not available it says why and the SQL
generator stays. --native=false switches back to the SQL
generator. Without the flag, install keeps the generator the schema has:
an upgrade that replaces snowflake_next_id() re-installs the native one
from the library it used.

Who makes IDs (release 8): only the owner of sfgen's objects and the
roles given ID-making, each with --grant ROLE (repeat it) or, in SQL, with
SELECT SCHEMA.snowflake_grant('ROLE') as the owner; a role whose inserts
use snowflake_next_id() as a column default needs it, as does a role that
calls it. A granted role is trusted: its own nextval() on the state could
make IDs repeat (docs/security.md). An upgrade from an earlier release
grants it to every role that may insert into a table whose default makes
IDs, so that every insert that worked goes on working. install prints
who holds it.

Examples:
  sfgen install --dsn postgres://app@localhost:5432/app --datacenter 0 --machine 1
  sfgen install --dsn postgres://owner@localhost/app --schema ids --datacenter 0 --machine 1 --grant app --grant worker
  sfgen install --dsn postgres://postgres@localhost/app --native --native-dir /usr/local/lib/sfgen
  sfgen install --dsn postgres://postgres@localhost/app --native
  sfgen install --dsn postgres://postgres@localhost/app --native=false
  DATABASE_URL=postgres://app@localhost/app sfgen install --schema ids --datacenter 1
  sfgen install --dsn postgres://app@localhost/app --schema discord --layout discord
  sfgen install --dsn postgres://app@citus-worker-1/app --schema ids --datacenter 1 --machine 2   # a Citus node
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
	var grants roleList
	c.fs.Var(&grants, "grant", "give `ROLE` ID-making (repeat for more roles): it may then make IDs with snowflake_next_id()")
	if code, done := c.parseFlags(args); done {
		return code
	}
	for _, r := range grants {
		if r == "" {
			return c.usageError("--grant: want a role name, not an empty string")
		}
		if strings.EqualFold(r, catalog.PublicRole) {
			return c.usageError("--grant %s: ID-making is granted to named roles only; PUBLIC, every role, could make IDs repeat by calling nextval() on the state by hand (docs/security.md)", r)
		}
	}
	if err := sf.node.half(); err != nil {
		return c.usageError("%v", err)
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
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	citus, err := catalog.CitusRole(ctx, catalog.DB(db))
	if err != nil {
		return c.fail("%s", redactErr(err, dsn))
	}
	cfg, err := connect.Config(dsn)
	if err != nil {
		return c.connectError(err)
	}
	if citus != "" {
		// Each Citus node keeps its own sfgen and node: install this one
		// alone, with Citus' DDL propagation off (else Citus would copy
		// this node's objects, node included, to every other).
		cfg = connect.CitusNodeLocal(cfg)
		db.Close()
		if db, err = connect.OpenDBConfig(ctx, cfg, dsn); err != nil {
			return c.connectError(err)
		}
	}
	conn, err := connect.ConnectConfig(ctx, cfg, dsn)
	if err != nil {
		return c.connectError(err)
	}
	defer conn.Close(context.Background())
	if !c.flagSet("layout") {
		// A schema with sfgen keeps its layout: read it rather than
		// assume Twitter's (an untrusted or unreadable schema is
		// reported by install.Run).
		if in, err := inspect(ctx, db, o.Schema); err == nil && !in.Layout.IsZero() {
			o.Layout = in.Layout
		}
	}
	opts := install.Options{SQL: o, Generator: want, NativeDir: *nativeDir, Grants: grants}
	if sf.node.given() {
		opts.Node = sf.node.asked()
	}
	rep, err := install.Run(ctx, db, conn, opts)
	if rep == nil {
		if errors.Is(err, install.ErrLayoutMismatch) {
			in, ierr := inspect(ctx, db, o.Schema)
			if ierr == nil && !in.Layout.IsZero() {
				return c.fail("schema %s holds sfgen for layout %s, not --layout %s; give --layout %q for this schema, or install into another one",
					o.Schema, describeLayout(in.Layout), describeLayout(o.Layout), layoutArg(in.Layout))
			}
		}
		return c.installError(err, dsn)
	}
	if len(rep.Applied) == 0 {
		fmt.Fprintf(stdout, "nothing to apply: schema %s is at sfgen release %d\n", rep.Schema, rep.Version)
	} else {
		for _, name := range rep.Applied {
			fmt.Fprintf(stdout, "applied %s\n", name)
		}
		fmt.Fprintf(stdout, "schema %s is at sfgen release %d\n", rep.Schema, rep.Version)
	}
	if rep.NodeUnset {
		fmt.Fprintf(c.stderr, "sfgen install: no node is set, so snowflake_next_id() refuses to make IDs until one is: give this database and schema a node no other maker uses, as the owner: sfgen node --schema %s --datacenter N --machine N (or install with --datacenter and --machine, or with the settings sfgen.datacenter and sfgen.machine)\n", rep.Schema)
	}
	if err == nil && rep.IDMakersOK && (len(rep.Applied) > 0 || len(grants) > 0 || len(rep.IDMakers) > 0) {
		printIDMakers(stdout, c.stderr, "install", rep.Schema, rep.IDMakers)
	}
	if r := rep.Citus; r != nil {
		fmt.Fprintf(stdout, "citus: Citus had made this schema's sfgen its own (%s); its node is now datacenter %d, machine %d, as given, and its objects are this node's alone again\n",
			strings.Join(r.Found, "; "), r.Datacenter, r.Machine)
		if r.Resumed != nil {
			fmt.Fprintf(stdout, "citus: the state is above every ID of that node stored here (%d %s read); the next ID is above %d\n", len(r.Resumed.Columns), plural(len(r.Resumed.Columns), "column", "columns"), r.Resumed.Above)
		}
	}
	if citus != "" {
		fmt.Fprintf(stdout, "citus: installed on this %s alone; every Citus node that takes writes needs its own install and node (sfgen install --dsn NODE --schema %s --datacenter N --machine N), and distributed tables DEFAULT %s.snowflake_next_id_local() (docs/citus.md)\n",
			citus, rep.Schema, pgident.Quote(rep.Schema))
	}
	if err != nil {
		return c.installError(err, dsn)
	}
	switch rep.Generator {
	case install.ToNative:
		fmt.Fprintf(stdout, "snowflake_next_id() is the native generator (%s)\n", rep.Library)
	case install.BackToSQL:
		fmt.Fprintf(stdout, "snowflake_next_id() is the SQL generator again (it was %s's)\n", rep.Library)
	case install.NativeAgain:
		fmt.Fprintf(stdout, "snowflake_next_id() is the native generator again (%s)\n", rep.Library)
	}
	return exitOK
}

// installError prints an error of install.Run, its database errors
// without dsn's password, and returns the exit status: 2 for a node that
// install would not keep, else 1.
func (c *cli) installError(err error, dsn string) int {
	var se *install.StepError
	if !errors.As(err, &se) {
		return c.fail("%s", redactErr(err, dsn))
	}
	msg := se.Message(func(err error) string { return redactErr(err, dsn) })
	if errors.Is(err, install.ErrNodeKept) || errors.Is(err, install.ErrCitusCopied) {
		return c.usageError("%s", msg)
	}
	return c.fail("%s", msg)
}

// printIDMakers says who besides the owner may make IDs in schema: one
// line on stdout (install always; other commands when a role besides the
// owner holds it), and on stderr a warning when that is every role.
func printIDMakers(stdout, stderr io.Writer, command, schema string, roles []string) {
	if len(roles) == 0 && command != "install" {
		return // the owner alone: node says who holds it only when others do
	}
	line := idMakersLine(roles)
	if len(roles) == 0 && command == "install" {
		line += fmt.Sprintf(" (other roles that insert need it: --grant ROLE, or SELECT %s.snowflake_grant('ROLE'))", pgident.Quote(schema))
	}
	fmt.Fprintf(stdout, "ID-making: %s\n", line)
	for _, r := range roles {
		if r == catalog.PublicRole {
			fmt.Fprintf(stderr, "sfgen %s: warning: every role (PUBLIC) may make IDs in schema %s, and so make them repeat by calling nextval() on %s.snowflake_state by hand; grant ID-making to the roles that insert, then REVOKE it from PUBLIC (docs/security.md)\n",
				command, schema, pgident.Quote(schema))
		}
	}
}

// idMakersLine says who may make IDs: the owner, and roles besides it.
func idMakersLine(roles []string) string {
	if len(roles) == 0 {
		return "the owner alone"
	}
	return "the owner and " + strings.Join(roles, ", ")
}

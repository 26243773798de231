package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/idkit"
	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

const nodeHelp = `
sfgen node [--dsn URL]... [--schema NAME]... [--datacenter N] [--machine N] [--json]

Shows or sets the node (datacenter and machine) that snowflake_next_id()
puts in every ID it makes in this database. Give each database that makes
IDs its own node, or their IDs can collide.

Without --datacenter and --machine it prints the current node, with the
schema, its sfgen release and the layout it was installed for. With either
it sets the node, each within the range of the schema's layout, and prints the old
and the new node; one without the other is refused (exit 2): a node is
given whole. Setting takes effect for every session from its next
transaction on, and needs the privileges of the role that owns sfgen's
functions (the one that installed them); the node is stored in the
database, so no session setting can change it. Setting takes one --dsn
and one --schema.

A schema installed without a node (sfgen release 3 or later, with no node
flags and no sfgen.datacenter/sfgen.machine settings) shows "no node":
its snowflake_next_id() refuses to make IDs until the node is set.

Fleet check: with several --dsn, several --schema, or both (every schema
in every database), it lists each database and schema with its node,
layout and release, under it (from sfgen release 4, where the role may
read them) its leases and reservations, and any expired lease whose
high-water mark is more than 1 s ahead of the database's clock (its
node's next holder would date its IDs that far ahead), and then every
pair of makers that shares a node: a schema's node, a lease or a
reservation, the same datacenter and machine in the same layout, whose
IDs can collide. A
restored dump or a database cloned from another (CREATE DATABASE ...
TEMPLATE) keeps its origin's node and shows up here. Schemas of different
layouts are not compared: each layout is its own ID space. The same
schema reached twice (two URLs of one database) is said once and not
compared with itself. A schema without sfgen gets a line saying so and
is no failure. Exit status 1 when a pair shares a node or a database
cannot be read, 0 otherwise. --json prints one object: ok, targets (one
per database and schema: database, schema, installed, datacenter,
machine, layout, release, same_as, error, leases, leases_error) and
shared (each pair: a and b, indexes into targets, a_maker and b_maker,
with their datacenter, machine and layout).
Databases are named user@host:port/database; passwords are never shown.

Citus: one --dsn whose database is a Citus cluster's (its pg_dist_node
lists nodes), without --datacenter and --machine, runs the fleet check
over every active primary node of the cluster, each reached with the
--dsn's user, password and settings at the host and port pg_dist_node
gives, and named "(citus coordinator)" or "(citus worker)". As every node
can take writes, a node where the schema has no sfgen or no node set
fails the check too ("missing" in --json, with "citus": true). Setting
a node on a Citus node (coordinator or worker) sets it there alone:
Citus' DDL propagation is off for that transaction, so no other node's
changes with it. docs/citus.md has more.

Examples:
  sfgen node --dsn postgres://app@localhost/app
  sfgen node --dsn postgres://owner@db1/app --datacenter 1 --machine 4
  DATABASE_URL=postgres://owner@db2/app sfgen node --schema ids --machine 5
  sfgen node --dsn postgres://app@db1/app --dsn postgres://app@db2/app --dsn postgres://app@db3/app
  sfgen node --dsn postgres://app@db1/app --schema public --schema ids --json
  sfgen node --dsn postgres://app@coordinator/app --schema ids    # a Citus cluster: every node
`

func runNode(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("node", nodeHelp, stdout, stderr)
	var dsns, schemas stringsFlag
	c.fs.Var(&dsns, "dsn", dsnHelp+"; give it again for each database of a fleet check")
	c.fs.Var(&schemas, "schema", "schema `NAME` that holds sfgen's functions (default "+catalog.Public.Name()+"); give it again for each schema of a fleet check")
	c.checks = append(c.checks, func() error {
		for i, s := range schemas {
			if s == "" {
				return errors.New("--schema is empty: give a schema's name, or leave --schema out for public")
			}
			parsed, err := catalog.ParseSchema(s)
			if err != nil {
				return err
			}
			schemas[i] = parsed.Name()
		}
		return nil
	})
	asJSON := c.fs.Bool("json", false, "list the nodes as one JSON object (the fleet check's, for any number of databases)")
	// The schema's layout sets the ranges, so they are checked once it is
	// read; until then, the widest any layout has (and help says so).
	node := nodeFlags{
		datacenter: c.intVar(snowflake.FieldDatacenter.String(), "", 0, 0, math.MaxInt32),
		machine:    c.intVar(snowflake.FieldMachine.String(), "", 0, 0, math.MaxInt32),
	}
	for _, f := range []struct {
		fld  snowflake.Field
		flag *intFlag
	}{{snowflake.FieldDatacenter, node.datacenter}, {snowflake.FieldMachine, node.machine}} {
		fld := f.fld
		c.fs.Lookup(fld.String()).Usage = fmt.Sprintf("set the %s to `N` (in the range of the schema's layout: 0 to %d in Twitter's and Discord's)", fld, snowflake.Twitter().Max(fld))
		f.flag.outOfRange = func(v string) string {
			return fmt.Sprintf("%s %s out of range: a node's %s is 0 or more, up to what the schema's layout allows (%d in Twitter's and Discord's), which is checked once the schema is read", fld, v, fld, snowflake.Twitter().Max(fld))
		}
	}
	if code, done := c.parseFlags(args); done {
		return code
	}
	if err := node.half(); err != nil {
		return c.usageError("%v", err)
	}
	if len(schemas) == 0 {
		schemas = stringsFlag{catalog.Public.Name()}
	}
	if node.given() {
		switch {
		case len(dsns) > 1 || len(schemas) > 1:
			return c.usageError("--datacenter and --machine set the node of one schema in one database; give one --dsn and one --schema, not %d and %d", max(len(dsns), 1), len(schemas))
		case *asJSON:
			return c.usageError("--json lists nodes; it does not go with --datacenter or --machine")
		}
	}
	if !node.given() && len(dsns) <= 1 && len(schemas) == 1 {
		dsn := ""
		if len(dsns) == 1 {
			dsn = dsns[0]
		}
		if nodes := c.citusNodes(ctx, dsnOrEnv(dsn)); nodes != nil {
			return c.citusFleetCheck(ctx, dsnOrEnv(dsn), nodes, schemas[0], *asJSON)
		}
	}
	if len(dsns) > 1 || len(schemas) > 1 || *asJSON {
		if len(dsns) == 0 {
			dsns = stringsFlag{""}
		}
		return c.fleetCheck(ctx, dsns, schemas, *asJSON)
	}
	dsnFlag := ""
	if len(dsns) == 1 {
		dsnFlag = dsns[0]
	}
	code := c.oneNode(ctx, dsnFlag, schemas[0], node)
	if code == exitOK && !c.nativeCheck(ctx, dsnOrEnv(dsnFlag), schemas[0]) {
		return exitFail
	}
	return code
}

// oneNode prints, or with node given sets and prints, the node of one
// schema in the database --dsn (dsnFlag) or $DATABASE_URL names.
func (c *cli) oneNode(ctx context.Context, dsnFlag, schema string, node nodeFlags) int {
	stdout, stderr := c.stdout, c.stderr
	db, dsn, code, ok := c.requireDB(ctx, dsnFlag)
	if !ok {
		return code
	}
	defer db.Close()

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return c.fail("%s", redactErr(err, dsn))
	}
	defer tx.Rollback()
	in, err := inspect(ctx, tx, schema)
	if err != nil {
		return c.fail("read the node: %s", redactErr(err, dsn))
	}
	if !in.Has(catalog.FuncNode) {
		return c.fail("sfgen's snowflake_next_id() is not installed in schema %s; %s", schema, notInstalledFix(ctx, catalog.DB(tx), schema))
	}
	unset := in.Node.State == catalog.NodeUnset
	oldDC, oldM, release := in.Node.Datacenter, in.Node.Machine, in.Release
	for _, f := range []struct {
		fld  snowflake.Field
		flag *intFlag
	}{{snowflake.FieldDatacenter, node.datacenter}, {snowflake.FieldMachine, node.machine}} {
		if lo, hi := in.Layout.Min(f.fld), in.Layout.Max(f.fld); f.flag.set && (f.flag.Int64() < lo || f.flag.Int64() > hi) {
			return c.usageError("%s in schema %s's layout, %s", idkit.RangeMessage(f.fld, f.flag.val.String(), lo, hi), schema, describeLayout(in.Layout))
		}
	}
	where := fmt.Sprintf("(schema %s, sfgen release %d, layout %s)", schema, release, layoutArg(in.Layout))
	// sfgen.Check's check, for the layout the schema has: an older
	// release (or a mix an older script left) is upgraded as it was
	// installed.
	if _, err := install.Check(ctx, catalog.DB(tx), schema, in.Layout); errors.Is(err, install.ErrOlderRelease) {
		fmt.Fprintf(stderr, "sfgen node: %v\n", err)
	}
	// A copy made without the rows of sfgen's tables cannot catch up.
	noTurns := false
	if n, exists, err := catalog.TurnRows(ctx, catalog.DB(tx), in.Schema); err != nil {
		return c.fail("read the catch-up's turns: %s", redactErr(err, dsn))
	} else if exists && n < sqlgen.CatchUpTurns {
		noTurns = true
		fmt.Fprintf(stderr, "sfgen node: schema %s cannot catch up with the clock, so snowflake_next_id() fails: its catch-up turn table has %d of %d rows (a copy made without the rows of sfgen's tables, such as pg_dump --schema-only restores); run sfgen install --schema %s on this database\n", schema, n, sqlgen.CatchUpTurns, schema)
	}
	old := fmt.Sprintf("datacenter %d, machine %d", oldDC, oldM)
	if unset {
		old = "no node"
		if !node.given() {
			fmt.Fprintf(stdout, "no node %s\n", where)
			fmt.Fprintf(stderr, "sfgen node: snowflake_next_id() refuses to make IDs until a node is set: give this database and schema a node no other maker uses, as the owner: sfgen node --schema %s --datacenter N --machine N\n", schema)
			return exitOK
		}
	}
	if !node.given() {
		fmt.Fprintf(stdout, "%s %s\n", old, where)
		if roles, ok, err := catalog.IDMakers(ctx, catalog.DB(tx), in.Schema); err != nil {
			return c.fail("%s", redactErr(err, dsn))
		} else if ok {
			printIDMakers(stdout, stderr, "node", schema, roles)
		}
		if noTurns {
			return exitFail
		}
		return exitOK
	}
	dc, m := node.values()
	// snowflake_set_node() is the schema's owner's code: call it as that
	// owner (SET LOCAL ROLE, for this transaction), or refuse, so that a
	// superuser running node runs no other role's code with its
	// privileges (issue 40).
	role, err := ownerToActAs(ctx, catalog.DB(tx), schema)
	if err != nil {
		return c.fail("%s", redactErr(err, dsn))
	}
	if role != "" {
		if _, err := tx.ExecContext(ctx, "SET LOCAL ROLE "+pgident.Quote(role)); err != nil {
			return c.fail("act as %s: %s", role, redactErr(err, dsn))
		}
		c.actingAs(role, schema)
	}
	// On Citus, this node's own (snowflake_set_node() replaces a function).
	if _, err := tx.ExecContext(ctx, catalog.CitusLocalDDL(true)); err != nil {
		return c.fail("set the node: %s", redactErr(err, dsn))
	}
	if _, err := tx.ExecContext(ctx, "SELECT "+in.Schema.Quoted()+".snowflake_set_node($1::integer, $2::integer)", dc, m); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" { // insufficient_privilege
			return c.fail("permission denied: %s; connect as the role that owns sfgen's functions", pe.Message)
		}
		return c.fail("set the node: %s", redactErr(err, dsn))
	}
	if in, err = inspect(ctx, tx, schema); err != nil {
		return c.fail("read the node back: %s", redactErr(err, dsn))
	}
	dc, m = in.Node.Datacenter, in.Node.Machine
	if err := tx.Commit(); err != nil {
		return c.fail("commit: %s", redactErr(err, dsn))
	}
	fmt.Fprintf(stdout, "%s -> datacenter %d, machine %d %s\n", old, dc, m, where)
	if !unset && (dc != oldDC || m != oldM) {
		fmt.Fprintf(stderr, "sfgen node: IDs made from now on carry datacenter %d, machine %d; those made before keep datacenter %d, machine %d. Both stay unique only while no other database or service makes IDs with either node (and the state goes on, so no ID repeats here); check a fleet with 'sfgen node --dsn A --dsn B ...'\n",
			dc, m, oldDC, oldM)
	}
	return exitOK
}

// inspect reads what schema holds of sfgen (catalog.Inspect) through q,
// a *sql.DB, *sql.Conn or *sql.Tx.
func inspect(ctx context.Context, q catalog.SQLQuerier, schema string) (catalog.Installed, error) {
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		return catalog.Installed{}, err
	}
	return catalog.Inspect(ctx, catalog.DB(q), s)
}

// fleetCheck reads the node of every schema in every database and prints
// them, then each pair sharing a node; see nodeHelp. catalog reads and
// compares (catalog.ReadDatabase, catalog.CompareFleet); this connects
// and prints.
func (c *cli) fleetCheck(ctx context.Context, dsns, schemas []string, asJSON bool) int {
	for i, d := range dsns {
		dsns[i] = dsnOrEnv(d)
		if dsns[i] == "" {
			return c.usageError("no database: give --dsn URL or set DATABASE_URL")
		}
	}
	parsed := make([]catalog.Schema, len(schemas))
	for i, s := range schemas {
		var err error
		if parsed[i], err = catalog.ParseSchema(s); err != nil {
			return c.usageError("%v", err)
		}
	}
	dbs := make([]catalog.FleetDatabase, len(dsns))
	for i, d := range dsns {
		cfg, err := connect.Config(d)
		if err != nil {
			return c.connectError(err)
		}
		dbs[i] = catalog.FleetDatabase{
			Name:    fmt.Sprintf("%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database),
			Schemas: parsed,
			Redact:  func(err error) string { return redactErr(err, d) },
		}
	}
	var targets []catalog.FleetTarget
	for i, d := range dsns {
		targets = append(targets, readDatabase(ctx, func(ctx context.Context) (*sql.DB, error) { return openDB(ctx, d) }, dbs[i])...)
	}
	return c.reportFleet(catalog.CompareFleet(targets), asJSON)
}

// reportFleet prints r, as JSON or as text, and returns the exit status:
// exitFail unless r is OK.
func (c *cli) reportFleet(r catalog.FleetReport, asJSON bool) int {
	if asJSON {
		b, _ := json.Marshal(r)
		fmt.Fprintf(c.stdout, "%s\n", b)
	} else {
		printFleet(c.stdout, r)
	}
	if !r.OK {
		return exitFail
	}
	return exitOK
}

// citusNodes returns the nodes of the Citus cluster whose database dsn
// names (catalog.ReadCitusNodes), or nil when it has no Citus or no node
// listed, or cannot be read: the one-database path then says why.
func (c *cli) citusNodes(ctx context.Context, dsn string) []catalog.CitusNode {
	if dsn == "" {
		return nil
	}
	db, err := openDB(ctx, dsn)
	if err != nil {
		return nil
	}
	defer db.Close()
	nodes, _, err := catalog.ReadCitusNodes(ctx, catalog.DB(db))
	if err != nil || len(nodes) == 0 {
		return nil
	}
	return nodes
}

// citusFleetCheck is the fleet check of a Citus cluster: schema in the
// database dsn names, on every node of the cluster (reached with dsn's
// user, password and settings at the host and port pg_dist_node gives),
// with dsn's own database first when the coordinator is not listed.
func (c *cli) citusFleetCheck(ctx context.Context, dsn string, nodes []catalog.CitusNode, schema string, asJSON bool) int {
	parsed, err := catalog.ParseSchema(schema)
	if err != nil {
		return c.usageError("%v", err)
	}
	cfg, err := connect.Config(dsn)
	if err != nil {
		return c.connectError(err)
	}
	name := func(cfg *pgx.ConnConfig, role string) string {
		return fmt.Sprintf("%s@%s:%d/%s (citus %s)", cfg.User, cfg.Host, cfg.Port, cfg.Database, role)
	}
	var targets []catalog.FleetTarget
	read := func(cfg *pgx.ConnConfig, role string) {
		d := catalog.FleetDatabase{Name: name(cfg, role), Schemas: []catalog.Schema{parsed},
			Redact: func(err error) string { return redactErr(err, dsn) }}
		open := func(ctx context.Context) (*sql.DB, error) { return connect.OpenDBConfig(ctx, cfg, dsn) }
		targets = append(targets, readDatabase(ctx, open, d)...)
	}
	if nodes[0].Group != 0 {
		read(cfg, "coordinator")
	}
	for _, n := range nodes {
		read(connect.AtAddress(cfg, n.Host, n.Port), n.Role())
	}
	return c.reportFleet(catalog.CompareCitusFleet(targets), asJSON)
}

// readDatabase reads the fleet check's targets of d, the database open
// opens, on one connection. A database that cannot be reached gives each
// schema the error.
func readDatabase(ctx context.Context, open func(context.Context) (*sql.DB, error), d catalog.FleetDatabase) []catalog.FleetTarget {
	db, err := open(ctx)
	if err != nil {
		return d.Unreadable(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return d.Unreadable(err)
	}
	defer conn.Close()
	return catalog.ReadDatabase(ctx, catalog.DB(conn), d)
}

// printFleet prints r as text: a line for each target, one for each pair
// sharing a node, and the verdict.
func printFleet(w io.Writer, r catalog.FleetReport) {
	name := func(t catalog.FleetTarget) string { return t.Database + " schema " + t.Schema }
	with, without, unset := 0, 0, 0
	for _, t := range r.Targets {
		switch {
		case t.Error != "":
			fmt.Fprintf(w, "%s: cannot read: %s\n", name(t), t.Error)
		case t.SameAs != nil:
			fmt.Fprintf(w, "%s: the same schema as %s, reached again; not compared\n", name(t), name(r.Targets[*t.SameAs]))
		case !t.Installed:
			without++
			fmt.Fprintf(w, "%s: no sfgen (%s is not in schema %s; 'sfgen install' puts it there)\n", name(t), t.Lacks, t.Schema)
		case !t.NodeSet:
			unset++
			fmt.Fprintf(w, "%s: no node set (snowflake_next_id() refuses to make IDs), layout %s, sfgen release %d\n", name(t), t.Layout, t.Release)
		default:
			with++
			fmt.Fprintf(w, "%s: datacenter %d, machine %d, layout %s, sfgen release %d\n", name(t), t.Datacenter, t.Machine, t.Layout, t.Release)
		}
		printLeases(w, t)
	}
	maker := func(what string, t catalog.FleetTarget) string {
		if what == "node" {
			return name(t)
		}
		return fmt.Sprintf("the %s in %s", what, name(t))
	}
	for _, p := range r.Shared {
		fmt.Fprintf(w, "shared node: datacenter %d, machine %d in layout %s: %s and %s\n", p.Datacenter, p.Machine, p.Layout,
			maker(p.AMaker, r.Targets[p.A]), maker(p.BMaker, r.Targets[p.B]))
	}
	if len(r.Shared) > 0 {
		leases := false
		for _, p := range r.Shared {
			leases = leases || p.AMaker != "node" || p.BMaker != "node"
		}
		if !leases {
			fmt.Fprintf(w, "FAIL: %d %s of schemas %s a node, so their IDs can collide; give each its own: sfgen node --dsn URL --schema NAME --datacenter N --machine N\n",
				len(r.Shared), plural(len(r.Shared), "pair", "pairs"), plural(len(r.Shared), "shares", "share"))
		} else {
			fmt.Fprintf(w, "FAIL: %d %s of makers (schemas, leases, reservations) %s a node, so their IDs can collide; give each schema its own node (sfgen node --dsn URL --schema NAME --datacenter N --machine N), and reserve it in every database that leases nodes of its layout (snowflake_lease_reserve())\n",
				len(r.Shared), plural(len(r.Shared), "pair", "pairs"), plural(len(r.Shared), "shares", "share"))
		}
	}
	if len(r.Missing) > 0 {
		fmt.Fprintf(w, "FAIL: %d %s of this Citus cluster cannot make IDs (no sfgen, or no node set), so inserts through %s that use snowflake_next_id() fail; every node that takes writes needs its own node\n",
			len(r.Missing), plural(len(r.Missing), "node", "nodes"), plural(len(r.Missing), "it", "them"))
	}
	for _, i := range r.Copied {
		t := r.Targets[i]
		fmt.Fprintf(w, "%s: Citus has made this sfgen its own: %s\n", name(t), strings.Join(t.CitusCopies, "; "))
	}
	if len(r.Copied) > 0 {
		fmt.Fprintf(w, "FAIL: on %d %s of this Citus cluster, Citus has made sfgen's objects its own (release 7 let any role's distributed table whose default reached them do it): it copies them over other nodes' at every metadata sync, and a worker's node may be the coordinator's; run sfgen install --dsn NODE --schema %s --datacenter N --machine N with each node's own node, on the coordinator first (docs/citus.md, \"A node Citus overwrote\")\n",
			len(r.Copied), plural(len(r.Copied), "node", "nodes"), r.Targets[r.Copied[0]].Schema)
	}
	if r.Failed > 0 {
		fmt.Fprintf(w, "FAIL: %d of %d could not be read, so the check is incomplete\n", r.Failed, len(r.Targets))
	}
	if r.OK {
		fmt.Fprintf(w, "ok: %d %s with sfgen, each with its own node", with, plural(with, "schema", "schemas"))
		var also []string
		if unset > 0 {
			also = append(also, fmt.Sprintf("%d with no node set", unset))
		}
		if without > 0 {
			also = append(also, fmt.Sprintf("%d without sfgen", without))
		}
		if len(also) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(also, ", "))
		}
		fmt.Fprintln(w)
	}
}

// printLeases prints, under a target's line, its leases and
// reservations (each a maker of its node), the expired rows whose
// high-water mark would date their node's next holder in the future, and
// why the leases could not be read.
func printLeases(w io.Writer, t catalog.FleetTarget) {
	for _, l := range t.Leases {
		switch l.Kind {
		case "reservation":
			fmt.Fprintf(w, "  reserved: datacenter %d, machine %d, for %s\n", l.Datacenter, l.Machine, l.Holder)
		case "lease":
			fmt.Fprintf(w, "  leased: datacenter %d, machine %d, to %s\n", l.Datacenter, l.Machine, l.Holder)
		default:
			fmt.Fprintf(w, "  ahead: datacenter %d, machine %d: its high-water mark is %.1f s ahead of the database's clock (its last holder, %s, ran ahead), so its next holder's IDs would be dated that far ahead; release 4 leases it only when no other node is free\n",
				l.Datacenter, l.Machine, float64(l.AheadMs)/1000, l.Holder)
		}
	}
	if t.LeasesError != "" {
		fmt.Fprintf(w, "  leases not read: %s\n", t.LeasesError)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/snowflake"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

const nodeHelp = `
sfgen node [--dsn URL]... [--schema NAME]... [--datacenter N] [--machine N] [--json]

Shows or sets the node (datacenter and machine) that snowflake_next_id()
puts in every ID it makes in this database. Give each database that makes
IDs its own node, or their IDs can collide.

Without --datacenter and --machine it prints the current node, with the
schema, its sfgen release and the layout it was installed for. With either
or both it sets them, each within the range of the schema's layout (the one not given keeps its value) and prints the old
and the new node. Setting takes effect for every session from its next
transaction on, and needs the privileges of the role that owns sfgen's
functions (the one that installed them); the node is stored in the
database, so no session setting can change it. Setting takes one --dsn
and one --schema.

A schema installed without a node (sfgen release 3 or later, with no node
flags and no sfgen.datacenter/sfgen.machine settings) shows "no node":
its snowflake_next_id() refuses to make IDs until the node is set, which
takes both --datacenter and --machine.

Fleet check: with several --dsn, several --schema, or both (every schema
in every database), it lists each database and schema with its node,
layout and release, and then every pair that shares a node: the same
datacenter and machine in the same layout, whose IDs can collide. A
restored dump or a database cloned from another (CREATE DATABASE ...
TEMPLATE) keeps its origin's node and shows up here. Schemas of different
layouts are not compared: each layout is its own ID space. The same
schema reached twice (two URLs of one database) is said once and not
compared with itself. A schema without sfgen gets a line saying so and
is no failure. Exit status 1 when a pair shares a node or a database
cannot be read, 0 otherwise. --json prints one object: ok, targets (one
per database and schema: database, schema, installed, datacenter,
machine, layout, release, same_as, error) and shared (each pair: a and b,
indexes into targets, with their datacenter, machine and layout).
Databases are named user@host:port/database; passwords are never shown.

Examples:
  sfgen node --dsn postgres://app@localhost/app
  sfgen node --dsn postgres://owner@db1/app --datacenter 1 --machine 4
  DATABASE_URL=postgres://owner@db2/app sfgen node --schema ids --machine 5
  sfgen node --dsn postgres://app@db1/app --dsn postgres://app@db2/app --dsn postgres://app@db3/app
  sfgen node --dsn postgres://app@db1/app --schema public --schema ids --json
`

func runNode(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("node", nodeHelp, stdout, stderr)
	var dsns, schemas stringsFlag
	c.fs.Var(&dsns, "dsn", dsnHelp+"; give it again for each database of a fleet check")
	c.fs.Var(&schemas, "schema", "schema `NAME` that holds sfgen's functions (default "+catalog.Public.Name()+"); give it again for each schema of a fleet check")
	c.checks = append(c.checks, func() error {
		for i, s := range schemas {
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
	for _, fld := range []snowflake.Field{snowflake.FieldDatacenter, snowflake.FieldMachine} {
		c.fs.Lookup(fld.String()).Usage = fmt.Sprintf("set the %s to `N` (in the range of the schema's layout: 0 to %d in Twitter's and Discord's)", fld, snowflake.Twitter.Max(fld))
	}
	if code, done := c.parseFlags(args); done {
		return code
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
	return c.oneNode(ctx, dsnFlag, schemas[0], node)
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
		return c.fail("sfgen's snowflake_next_id() is not installed in schema %s; run 'sfgen install' first", schema)
	}
	unset := in.Node.State == catalog.NodeUnset
	oldDC, oldM, release := in.Node.Datacenter, in.Node.Machine, in.Release
	for _, f := range []struct {
		fld  snowflake.Field
		flag *intFlag
	}{{snowflake.FieldDatacenter, node.datacenter}, {snowflake.FieldMachine, node.machine}} {
		if lo, hi := in.Layout.Min(f.fld), in.Layout.Max(f.fld); f.flag.set && (f.flag.Int64() < lo || f.flag.Int64() > hi) {
			return c.usageError("%s in schema %s's layout, %s", snowflake.RangeMessage(f.fld, f.flag.val.String(), lo, hi), schema, describeLayout(in.Layout))
		}
	}
	where := fmt.Sprintf("(schema %s, sfgen release %d, layout %s)", schema, release, layoutArg(in.Layout))
	if release < sqlgen.Latest {
		fmt.Fprintf(stderr, "sfgen node: schema %s is at sfgen release %d, older than this sfgen's release %d: upgrade it ('sfgen verify' says how)\n", schema, release, sqlgen.Latest)
	}
	old := fmt.Sprintf("datacenter %d, machine %d", oldDC, oldM)
	if unset {
		old = "no node"
		if !node.given() {
			fmt.Fprintf(stdout, "no node %s\n", where)
			fmt.Fprintf(stderr, "sfgen node: snowflake_next_id() refuses to make IDs until a node is set: give this database and schema a node no other maker uses, as the owner: sfgen node --schema %s --datacenter N --machine N\n", schema)
			return exitOK
		}
		if !node.datacenter.set || !node.machine.set {
			return c.usageError("schema %s has no node yet: give both --datacenter and --machine", schema)
		}
	}
	if !node.given() {
		fmt.Fprintf(stdout, "%s %s\n", old, where)
		return exitOK
	}
	dc, m := node.over(oldDC, oldM)
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

// A nodeTarget is one database and schema of a fleet check, as --json
// shows it.
type nodeTarget struct {
	Database   string `json:"database"` // user@host:port/database, never the password
	Schema     string `json:"schema"`
	Installed  bool   `json:"installed"` // sfgen's node is there to read
	NodeSet    bool   `json:"node_set"`  // and set (else snowflake_next_id() refuses to make IDs)
	Datacenter int64  `json:"datacenter"`
	Machine    int64  `json:"machine"`
	Layout     string `json:"layout,omitempty"` // a preset's name, or the spec
	Release    int    `json:"release,omitempty"`
	SameAs     *int   `json:"same_as,omitempty"` // an earlier target that is this very schema, reached again
	Error      string `json:"error,omitempty"`   // why it could not be read

	missing string // why there is no node to read, for a schema without sfgen
	layout  snowflake.Layout
	key     string // the server, database and schema, to find the same one reached twice; "" when unknown
}

func (t *nodeTarget) name() string { return t.Database + " schema " + t.Schema }

// A sharedNode is a pair of targets, a and b (indexes), with one node.
type sharedNode struct {
	A          int    `json:"a"`
	B          int    `json:"b"`
	Datacenter int64  `json:"datacenter"`
	Machine    int64  `json:"machine"`
	Layout     string `json:"layout"`
}

// fleetCheck reads the node of every schema in every database and prints
// them, then each pair sharing a node; see nodeHelp.
func (c *cli) fleetCheck(ctx context.Context, dsns, schemas []string, asJSON bool) int {
	for i, d := range dsns {
		dsns[i] = dsnOrEnv(d)
		if dsns[i] == "" {
			return c.usageError("no database: give --dsn URL or set DATABASE_URL")
		}
	}
	names := make([]string, len(dsns))
	for i, d := range dsns {
		cfg, err := connect.Config(d)
		if err != nil {
			return c.connectError(err)
		}
		names[i] = fmt.Sprintf("%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
	}
	var targets []*nodeTarget
	for i, d := range dsns {
		targets = append(targets, readTargets(ctx, d, names[i], schemas)...)
	}

	failed := 0
	seen := map[string]int{}
	for i, t := range targets {
		if t.Error != "" {
			failed++
			continue
		}
		if t.key == "" {
			continue
		}
		if j, ok := seen[t.key]; ok {
			t.SameAs = &j
			continue
		}
		seen[t.key] = i
	}
	shared := []sharedNode{}
	for i, a := range targets {
		for j := i + 1; j < len(targets); j++ {
			b := targets[j]
			if !a.NodeSet || !b.NodeSet || a.SameAs != nil || b.SameAs != nil || a.layout != b.layout ||
				a.Datacenter != b.Datacenter || a.Machine != b.Machine {
				continue
			}
			shared = append(shared, sharedNode{A: i, B: j, Datacenter: a.Datacenter, Machine: a.Machine, Layout: a.Layout})
		}
	}
	ok := len(shared) == 0 && failed == 0

	if asJSON {
		b, _ := json.Marshal(struct {
			OK      bool          `json:"ok"`
			Targets []*nodeTarget `json:"targets"`
			Shared  []sharedNode  `json:"shared"`
		}{ok, targets, shared})
		fmt.Fprintf(c.stdout, "%s\n", b)
	} else {
		with, without, unset := 0, 0, 0
		for _, t := range targets {
			switch {
			case t.Error != "":
				fmt.Fprintf(c.stdout, "%s: cannot read: %s\n", t.name(), t.Error)
			case t.SameAs != nil:
				fmt.Fprintf(c.stdout, "%s: the same schema as %s, reached again; not compared\n", t.name(), targets[*t.SameAs].name())
			case !t.Installed:
				without++
				fmt.Fprintf(c.stdout, "%s: no sfgen (%s)\n", t.name(), t.missing)
			case !t.NodeSet:
				unset++
				fmt.Fprintf(c.stdout, "%s: no node set (snowflake_next_id() refuses to make IDs), layout %s, sfgen release %d\n", t.name(), t.Layout, t.Release)
			default:
				with++
				fmt.Fprintf(c.stdout, "%s: datacenter %d, machine %d, layout %s, sfgen release %d\n", t.name(), t.Datacenter, t.Machine, t.Layout, t.Release)
			}
		}
		for _, p := range shared {
			fmt.Fprintf(c.stdout, "shared node: datacenter %d, machine %d in layout %s: %s and %s\n", p.Datacenter, p.Machine, p.Layout, targets[p.A].name(), targets[p.B].name())
		}
		if len(shared) > 0 {
			fmt.Fprintf(c.stdout, "FAIL: %d %s of schemas %s a node, so their IDs can collide; give each its own: sfgen node --dsn URL --schema NAME --datacenter N --machine N\n",
				len(shared), plural(len(shared), "pair", "pairs"), plural(len(shared), "shares", "share"))
		}
		if failed > 0 {
			fmt.Fprintf(c.stdout, "FAIL: %d of %d could not be read, so the check is incomplete\n", failed, len(targets))
		}
		if ok {
			fmt.Fprintf(c.stdout, "ok: %d %s with sfgen, each with its own node", with, plural(with, "schema", "schemas"))
			var also []string
			if unset > 0 {
				also = append(also, fmt.Sprintf("%d with no node set", unset))
			}
			if without > 0 {
				also = append(also, fmt.Sprintf("%d without sfgen", without))
			}
			if len(also) > 0 {
				fmt.Fprintf(c.stdout, " (%s)", strings.Join(also, ", "))
			}
			fmt.Fprintln(c.stdout)
		}
	}
	if !ok {
		return exitFail
	}
	return exitOK
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// readTargets reads the node, layout and release of each schema in the
// database dsn (called name in messages), on one connection. A database
// that cannot be reached gives each schema the error.
func readTargets(ctx context.Context, dsn, name string, schemas []string) []*nodeTarget {
	var out []*nodeTarget
	for _, s := range schemas {
		out = append(out, &nodeTarget{Database: name, Schema: s})
	}
	fail := func(err error) []*nodeTarget {
		for _, t := range out {
			if t.Error == "" {
				t.Error = redactErr(err, dsn)
			}
		}
		return out
	}
	db, err := openDB(ctx, dsn)
	if err != nil {
		return fail(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fail(err)
	}
	defer conn.Close()
	// Which server and database this is, to tell the same schema reached
	// twice from a clone: a clone or a restore is another database (or,
	// a promoted physical copy, a server started at another time).
	var server string
	var canControl bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_catalog.has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE')").Scan(&canControl); err != nil {
		return fail(err)
	}
	if canControl {
		if err := conn.QueryRowContext(ctx, "SELECT system_identifier::pg_catalog.text FROM pg_catalog.pg_control_system()").Scan(&server); err != nil {
			return fail(err)
		}
	}
	var where string
	if err := conn.QueryRowContext(ctx, `SELECT pg_catalog.pg_postmaster_start_time()::pg_catalog.text OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) d.oid::pg_catalog.text
		FROM pg_catalog.pg_database d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()`).Scan(&where); err != nil {
		return fail(err)
	}
	for _, t := range out {
		t.key = server + " " + where + " " + t.Schema
		in, err := inspect(ctx, conn, t.Schema)
		if err != nil {
			t.Error = redactErr(err, dsn)
			continue
		}
		if in.Layout.IsZero() {
			t.missing = "snowflake_layout() is not in schema " + t.Schema + "; 'sfgen install' puts it there"
			continue
		}
		t.layout, t.Layout, t.Release = in.Layout, layoutArg(in.Layout), in.Release
		switch in.Node.State {
		case catalog.NoNodeFunction:
			t.missing = "snowflake_node() is not in schema " + t.Schema + "; 'sfgen install' puts it there"
		case catalog.NodeUnset:
			t.Installed = true
		default:
			t.Installed, t.NodeSet = true, true
			t.Datacenter, t.Machine = in.Node.Datacenter, in.Node.Machine
		}
	}
	return out
}

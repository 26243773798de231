package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/idkit"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// installSchema installs sfgen's script into a fresh schema of dsn.
func installSchema(t *testing.T, dsn string, o sqlgen.Options) string {
	t.Helper()
	conn, schema := testSchema(t, dsn)
	o.Schema = schema
	script, err := sqlgen.Script(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), string(script)); err != nil {
		t.Fatal(err)
	}
	return schema
}

func oneLine(t *testing.T, s string) {
	t.Helper()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Errorf("stderr is not one line: %q", s)
	}
}

func TestNodeShowAndSet(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := installSchema(t, dsn, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 2, Machine: 4})
	where := fmt.Sprintf(" (schema %s, sfgen release %d, layout twitter)\n", schema, sqlgen.Latest)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "datacenter 2, machine 4" + where},
		{[]string{"--datacenter", "3", "--machine", "7"}, "datacenter 2, machine 4 -> datacenter 3, machine 7" + where},
		{[]string{"--datacenter", "3", "--machine", "31"}, "datacenter 3, machine 7 -> datacenter 3, machine 31" + where},
		{nil, "datacenter 3, machine 31" + where},
	} {
		code, out, errOut := sfgen(t, append([]string{"node", "--dsn", dsn, "--schema", schema}, tc.args...)...)
		if code != 0 || out != tc.want {
			t.Errorf("node %v: exit %d, stdout %q, stderr %q; want 0, %q", tc.args, code, out, errOut, tc.want)
		}
		// A change says what it means for uniqueness, on stderr, once.
		if changed := tc.args != nil; changed != strings.Contains(errOut, "stay unique only while no other database or service makes IDs with either node") {
			t.Errorf("node %v: stderr %q; want the uniqueness note exactly when the node changes", tc.args, errOut)
		} else if changed {
			oneLine(t, errOut)
		}
	}
	// Setting the node it has already changes nothing and says nothing.
	if code, out, errOut := sfgen(t, "node", "--dsn", dsn, "--schema", schema, "--datacenter", "3", "--machine", "31"); code != 0 || errOut != "" || !strings.Contains(out, "-> datacenter 3, machine 31") {
		t.Errorf("node set to the node it has: exit %d, %q, %q", code, out, errOut)
	}
}

// TestNodeNeedsTheOwner: a role that may use sfgen's schema reads the node
// but cannot change it: node, which calls snowflake_set_node() as its
// owner, refuses a role that cannot act as the owner, EXECUTE granted or
// not, naming both roles and whom to connect as.
func TestNodeNeedsTheOwner(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := installSchema(t, dsn, sqlgen.Options{Layout: snowflake.Twitter()})
	conn, _ := testSchema(t, dsn)
	ctx := context.Background()
	var owner string
	if err := conn.QueryRow(ctx, "SELECT current_user").Scan(&owner); err != nil {
		t.Fatal(err)
	}
	role, appDSN := pgtest.LoginRole(t, dsn, "app", "")
	if _, err := conn.Exec(ctx, "GRANT USAGE ON SCHEMA "+schema+" TO "+role); err != nil {
		t.Fatal(err)
	}
	unchanged := fmt.Sprintf("datacenter 0, machine 0 (schema %s, sfgen release %d, layout twitter)\n", schema, sqlgen.Latest)
	code, out, errOut := sfgen(t, "node", "--dsn", appDSN, "--schema", schema)
	if code != 0 || out != unchanged || errOut != "" {
		t.Errorf("a non-owner reading the node: exit %d, %q %q; want 0, %q", code, out, errOut, unchanged)
	}

	// Node calls snowflake_set_node() as its owner (issue 40): a role
	// that cannot act as the owner is refused before any call, EXECUTE
	// or not, naming both roles and whom to connect as.
	refusal := fmt.Sprintf("sfgen node: schema %s's sfgen functions belong to role %s, and role %s cannot act as it: ", schema, owner, role)
	hint := fmt.Sprintf("; connect as %s (or as a role that can SET ROLE %s)\n", owner, owner)
	for _, tc := range []struct {
		name, grant, want string
	}{
		{"no EXECUTE", "", refusal},
		{"EXECUTE granted", "GRANT EXECUTE ON FUNCTION " + schema + ".snowflake_set_node(integer, integer) TO " + role, refusal},
	} {
		if tc.grant != "" {
			if _, err := conn.Exec(ctx, tc.grant); err != nil {
				t.Fatal(err)
			}
		}
		code, out, errOut := sfgen(t, "node", "--dsn", appDSN, "--schema", schema, "--datacenter", "1", "--machine", "1")
		if code != 1 || out != "" || !strings.HasPrefix(errOut, tc.want) || !strings.HasSuffix(errOut, hint) {
			t.Errorf("%s: a non-owner setting the node: exit %d, stdout %q, stderr %q; want 1, nothing, and %q...%q", tc.name, code, out, errOut, tc.want, hint)
		}
		oneLine(t, errOut)
		if code, out, _ := sfgen(t, "node", "--dsn", dsn, "--schema", schema); code != 0 || out != unchanged {
			t.Errorf("%s: node after a refused change: %q; want %q", tc.name, out, unchanged)
		}
	}
}

func TestNodeErrors(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		// Outside every layout's range: refused before connecting (the
		// schema's layout's range is checked once read; TestLayoutsSideBySide).
		{[]string{"--dsn", "postgres://x@/db?host=/nonexistent", "--datacenter", "2147483648"}, 2, []string{"datacenter", "2147483648", "0 or more, up to what the schema's layout allows (31 in Twitter's"}},
		{[]string{"--dsn", "postgres://x@/db?host=/nonexistent", "--datacenter", "-1"}, 2, []string{"datacenter", "-1", "0 or more, up to what the schema's layout allows (31 in Twitter's"}},
		{[]string{"--dsn", "postgres://x@/db?host=/nonexistent", "--machine", "x"}, 2, []string{"machine", `"x"`, "[0, 2147483647]"}},
		{[]string{"--dsn", "postgres://x@/db?host=/nonexistent", "--schema", "Bad-Name"}, 2, []string{"Bad-Name"}},
		{[]string{"--datacenter", "1", "--machine", "1"}, 2, []string{"--dsn", "DATABASE_URL"}},
		{[]string{"extra"}, 2, []string{"extra"}},
		{[]string{"--dsn", "postgres://u:s3cretpw@/db?host=/nonexistent&connect_timeout=2"}, 1, []string{"connect"}},
	} {
		code, out, errOut := sfgen(t, append([]string{"node"}, tc.args...)...)
		if code != tc.code || out != "" {
			t.Errorf("node %v: exit %d, stdout %q; want %d and nothing", tc.args, code, out, tc.code)
		}
		oneLine(t, errOut)
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("node %v: stderr %q does not name %s", tc.args, errOut, w)
			}
		}
		if strings.Contains(errOut, "s3cretpw") {
			t.Errorf("node %v: stderr shows the password: %q", tc.args, errOut)
		}
	}
}

func TestNodeNotInstalled(t *testing.T) {
	dsn := pgtest.DSN(t)
	_, schema := testSchema(t, dsn)
	code, _, errOut := sfgen(t, "node", "--dsn", dsn, "--schema", schema)
	if code != 1 || !strings.Contains(errOut, "not installed") {
		t.Errorf("exit %d, stderr %q; want 1 and not installed", code, errOut)
	}
	oneLine(t, errOut)
}

func TestNodeHelp(t *testing.T) {
	code, out, _ := sfgen(t, "node", "--help")
	if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "--datacenter") {
		t.Errorf("node --help: exit %d\n%s", code, out)
	}
}

// TestNodeSaysTheRelease installs release 1: node shows it and warns that
// it is older than this sfgen's.
func TestNodeSaysTheRelease(t *testing.T) {
	dsn := pgtest.DSN(t)
	conn, schema := testSchema(t, dsn)
	script, err := released.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema, Datacenter: 1, Machine: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), string(script)); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sfgen(t, "node", "--dsn", dsn, "--schema", schema)
	// Release 1 gave every role ID-making: node says so, and warns.
	if code != 0 || out != "datacenter 1, machine 2 (schema "+schema+", sfgen release 1, layout twitter)\nID-making: the owner and PUBLIC\n" ||
		!strings.Contains(errOut, fmt.Sprintf("is at sfgen release 1, older than this sfgen's release %d", sqlgen.Latest)) ||
		!strings.Contains(errOut, "every role (PUBLIC) may make IDs") {
		t.Errorf("node on release 1 = %d, %q, %q", code, out, errOut)
	}
}

// nodeName is how the fleet check names database dsn.
func nodeName(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := connect.Config(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}

// TestNodeFleet: three databases, each with sfgen in a schema of one
// name; the fleet check lists them and exits 1 naming every pair that
// shares a node in one layout, 0 otherwise. Schemas of different layouts
// are not compared, and a database without sfgen gets a line of its own.
func TestNodeFleet(t *testing.T) {
	discord, _ := idkit.LayoutByName("discord")
	type db struct {
		o    *sqlgen.Options // nil: no sfgen
		line string          // after the name, as listed
	}
	tw := func(dc, m int64) db {
		return db{&sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: dc, Machine: m}, fmt.Sprintf("datacenter %d, machine %d, layout twitter, sfgen release %d", dc, m, sqlgen.Latest)}
	}
	for _, tc := range []struct {
		name   string
		dbs    []db
		code   int
		shared [][2]int // pairs of dbs
		last   string
	}{
		{"two share", []db{tw(1, 1), tw(2, 2), tw(1, 1)}, 1, [][2]int{{0, 2}},
			"FAIL: 1 pair of schemas shares a node, so their IDs can collide; give each its own: sfgen node --dsn URL --schema NAME --datacenter N --machine N"},
		{"all share", []db{tw(0, 0), tw(0, 0), tw(0, 0)}, 1, [][2]int{{0, 1}, {0, 2}, {1, 2}},
			"FAIL: 3 pairs of schemas share a node, so their IDs can collide; give each its own: sfgen node --dsn URL --schema NAME --datacenter N --machine N"},
		{"all distinct", []db{tw(1, 1), tw(2, 2), tw(1, 2)}, 0, nil, "ok: 3 schemas with sfgen, each with its own node"},
		{"one without sfgen", []db{tw(1, 1), {nil, "no sfgen (snowflake_layout() is not in schema SCHEMA; 'sfgen install' puts it there)"}, tw(2, 1)}, 0, nil,
			"ok: 2 schemas with sfgen, each with its own node (1 without sfgen)"},
		{"different layouts", []db{tw(1, 1), {&sqlgen.Options{Layout: discord, Datacenter: 1, Machine: 1}, fmt.Sprintf("datacenter 1, machine 1, layout discord, sfgen release %d", sqlgen.Latest)}, tw(2, 2)}, 0, nil,
			"ok: 3 schemas with sfgen, each with its own node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"node"}
			var names []string
			schema := ""
			for _, d := range tc.dbs {
				dsn := pgtest.DSN(t)
				if d.o != nil {
					schema = installSchema(t, dsn, *d.o)
				}
				args = append(args, "--dsn", dsn)
				names = append(names, nodeName(t, dsn))
			}
			args = append(args, "--schema", schema)
			var want strings.Builder
			for i, d := range tc.dbs {
				fmt.Fprintf(&want, "%s schema %s: %s\n", names[i], schema, strings.ReplaceAll(d.line, "SCHEMA", schema))
			}
			for _, p := range tc.shared {
				fmt.Fprintf(&want, "shared node: datacenter %d, machine %d in layout twitter: %s schema %s and %s schema %s\n",
					tc.dbs[p[0]].o.Datacenter, tc.dbs[p[0]].o.Machine, names[p[0]], schema, names[p[1]], schema)
			}
			want.WriteString(tc.last + "\n")
			code, out, errOut := sfgen(t, args...)
			if code != tc.code || out != want.String() || errOut != "" {
				t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant exit %d, stdout:\n%s", code, errOut, out, tc.code, want.String())
			}
		})
	}
}

// TestNodeFleetJSON checks --json's shape: ok, one target per database
// and schema (every schema in every database), the shared pairs.
func TestNodeFleetJSON(t *testing.T) {
	a, b := pgtest.DSN(t), pgtest.DSN(t)
	schema := installSchema(t, a, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 3, Machine: 4})
	installSchema(t, b, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 3, Machine: 4})
	code, out, errOut := sfgen(t, "node", "--dsn", a, "--dsn", b, "--schema", schema, "--schema", "public", "--json")
	var got struct {
		OK      bool `json:"ok"`
		Targets []struct {
			Database   string `json:"database"`
			Schema     string `json:"schema"`
			Installed  bool   `json:"installed"`
			NodeSet    bool   `json:"node_set"`
			Datacenter int64  `json:"datacenter"`
			Machine    int64  `json:"machine"`
			Layout     string `json:"layout"`
			Release    int    `json:"release"`
			SameAs     *int   `json:"same_as"`
			Error      string `json:"error"`
		} `json:"targets"`
		Shared []struct {
			A, B                int
			Datacenter, Machine int64
			Layout              string
		} `json:"shared"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 || errOut != "" || strings.Count(out, "\n") != 1 {
		t.Fatalf("exit %d, %v, stderr %q, stdout %q; want 1 and one JSON line", code, err, errOut, out)
	}
	if got.OK || len(got.Targets) != 4 || len(got.Shared) != 1 {
		t.Fatalf("--json: %s", out)
	}
	for i, w := range []struct {
		db, schema string
		installed  bool
	}{{nodeName(t, a), schema, true}, {nodeName(t, a), "public", false}, {nodeName(t, b), schema, true}, {nodeName(t, b), "public", false}} {
		g := got.Targets[i]
		if g.Database != w.db || g.Schema != w.schema || g.Installed != w.installed || g.NodeSet != w.installed || g.SameAs != nil || g.Error != "" ||
			w.installed && (g.Datacenter != 3 || g.Machine != 4 || g.Layout != "twitter" || g.Release != sqlgen.Latest) {
			t.Errorf("target %d = %+v; want %+v with node 3/4", i, g, w)
		}
	}
	if s := got.Shared[0]; s.A != 0 || s.B != 2 || s.Datacenter != 3 || s.Machine != 4 || s.Layout != "twitter" {
		t.Errorf("shared = %+v; want targets 0 and 2, 3/4, twitter", s)
	}
	// One database, --json: the same object, with one target.
	code, out, _ = sfgen(t, "node", "--dsn", a, "--schema", schema, "--json")
	if code != 0 || !strings.HasPrefix(out, `{"ok":true,"targets":[{"database":"`+nodeName(t, a)+`","schema":"`+schema+`","installed":true,"node_set":true,"datacenter":3,"machine":4,"layout":"twitter","release":`+fmt.Sprint(sqlgen.Latest)+`}],"shared":[]}`) {
		t.Errorf("one database --json: exit %d, %s", code, out)
	}
}

// TestNodeFleetClone: a database cloned from an installed one (CREATE
// DATABASE ... TEMPLATE, as a restore would be) keeps its node, and the
// fleet check finds the pair; the same database given twice is one
// schema reached again, not a pair.
func TestNodeFleetClone(t *testing.T) {
	ctx := context.Background()
	src := pgtest.DSN(t)
	conn, err := pgx.Connect(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	script, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 5, Machine: 6})
	if err == nil {
		_, err = conn.Exec(ctx, string(script))
	}
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	server, err := pgx.Connect(ctx, pgtest.ServerDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close(ctx)
	srcName, clone := nodeNameParts(t, src)
	if _, err := server.Exec(ctx, "CREATE DATABASE "+pgident.Quote(clone)+" TEMPLATE "+pgident.Quote(srcName)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A connection of its own: server is closed by then.
		ctx := context.Background()
		admin, err := pgx.Connect(ctx, pgtest.ServerDSN(t))
		if err == nil {
			_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgident.Quote(clone)+" WITH (FORCE)")
			admin.Close(ctx)
		}
		if err != nil {
			t.Errorf("drop the clone %s: %v", clone, err)
		}
	})
	u, err := url.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + clone
	cloneDSN := u.String()

	code, out, _ := sfgen(t, "node", "--dsn", src, "--dsn", cloneDSN)
	line := fmt.Sprintf(" schema public: datacenter 5, machine 6, layout twitter, sfgen release %d\n", sqlgen.Latest)
	want := nodeName(t, src) + line +
		nodeName(t, cloneDSN) + line +
		"shared node: datacenter 5, machine 6 in layout twitter: " + nodeName(t, src) + " schema public and " + nodeName(t, cloneDSN) + " schema public\n"
	if code != 1 || !strings.HasPrefix(out, want) {
		t.Errorf("a clone: exit %d, stdout:\n%s\nwant 1 and:\n%s", code, out, want)
	}
	code, out, _ = sfgen(t, "node", "--dsn", src, "--dsn", src)
	want = nodeName(t, src) + line +
		nodeName(t, src) + " schema public: the same schema as " + nodeName(t, src) + " schema public, reached again; not compared\n" +
		"ok: 1 schema with sfgen, each with its own node\n"
	if code != 0 || out != want {
		t.Errorf("one database twice: exit %d, stdout:\n%s\nwant 0 and:\n%s", code, out, want)
	}
}

// nodeNameParts returns the database name of dsn and a name for its clone.
func nodeNameParts(t *testing.T, dsn string) (db, clone string) {
	t.Helper()
	cfg, err := connect.Config(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Database, cfg.Database + "_clone"
}

// TestNodeFleetErrors: setting a node takes one database and one schema;
// a database that cannot be read fails the check with a line of its own;
// no password shows, of a database read or not.
func TestNodeFleetErrors(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := installSchema(t, dsn, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 1})
	_, appDSN := pgtest.LoginRole(t, dsn, "app", "")
	u, err := url.Parse(appDSN)
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	t.Setenv("DATABASE_URL", "") // after pgtest, which may read it
	const bad = "postgres://u:s3cretpw@/db?host=/nonexistent&connect_timeout=2"
	for _, tc := range []struct {
		args []string
		code int
		want string // in stdout, or stderr for exit 2
	}{
		{[]string{"--dsn", dsn, "--dsn", dsn, "--datacenter", "0", "--machine", "3"}, 2, "give one --dsn and one --schema, not 2 and 1"},
		{[]string{"--dsn", dsn, "--schema", schema, "--schema", "public", "--datacenter", "3", "--machine", "0"}, 2, "give one --dsn and one --schema, not 1 and 2"},
		{[]string{"--schema", schema, "--schema", "public", "--datacenter", "3", "--machine", "0"}, 2, "give one --dsn and one --schema, not 1 and 2"},
		{[]string{"--dsn", dsn, "--json", "--datacenter", "0", "--machine", "3"}, 2, "--json lists nodes"},
		{[]string{"--dsn", dsn, "--schema", schema, "--schema", "Bad-Name"}, 2, "Bad-Name"},
		{[]string{"--schema", schema, "--schema", "public"}, 2, "no database"},
		{[]string{"--dsn", appDSN, "--dsn", bad, "--schema", schema}, 1,
			"/db schema " + schema + ": cannot read: "},
	} {
		code, out, errOut := sfgen(t, append([]string{"node"}, tc.args...)...)
		text := out
		if tc.code == 2 {
			text = errOut
			if out != "" {
				t.Errorf("node %v: stdout %q; want nothing", tc.args, out)
			}
			oneLine(t, errOut)
		}
		if code != tc.code || !strings.Contains(text, tc.want) {
			t.Errorf("node %v: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
		for _, secret := range []string{"s3cretpw", password} {
			if strings.Contains(out+errOut, secret) {
				t.Errorf("node %v shows a password: %q %q", tc.args, out, errOut)
			}
		}
	}
	// Unchanged by the refused settings.
	if code, out, _ := sfgen(t, "node", "--dsn", dsn, "--schema", schema); code != 0 || !strings.HasPrefix(out, "datacenter 1, machine 1 ") {
		t.Errorf("after the refusals: %d %q", code, out)
	}
}

// TestInstallRefusesAHeldNode: from release 4 a node of a layout belongs
// to one maker across the database's schemas, so a first install with
// node flags into a second schema refuses (SF204, naming the holder) the
// node the first schema has, as the single-file migration and the plain
// script do, and leaves no schema behind; another node installs.
func TestInstallRefusesAHeldNode(t *testing.T) {
	dsn := pgtest.DSN(t)
	if code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "orders", "--datacenter", "1", "--machine", "1"); code != 0 {
		t.Fatalf("install orders = %d %s %s", code, out, errOut)
	}
	code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "billing", "--datacenter", "1", "--machine", "1")
	if code == 0 || !strings.Contains(errOut, "SF204") || !strings.Contains(errOut, "schema orders's own node") {
		t.Fatalf("install billing with orders's node = %d, %q, %q; want it refused (SF204) naming schema orders", code, out, errOut)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var left bool
	if err := db.QueryRow(`SELECT pg_catalog.to_regnamespace('billing') IS NOT NULL`).Scan(&left); err != nil || left {
		t.Errorf("schema billing left behind by the refused install: %v, %v", left, err)
	}
	if code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "billing", "--datacenter", "1", "--machine", "2"); code != 0 {
		t.Fatalf("install billing with its own node = %d %s %s", code, out, errOut)
	}
}

// TestNodeFleetLeases: the fleet check lists a schema's leases and
// reservations under it, flags a lease in one database that shares its
// node with a schema's own node in another (exit 1), and lists an expired
// row whose high-water mark is ahead of the database's clock.
func TestNodeFleetLeases(t *testing.T) {
	a, b := pgtest.DSN(t), pgtest.DSN(t)
	sa := installSchema(t, a, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 0, Machine: 0})
	conn, err := pgx.Connect(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var dc, m, token int64
	if err := conn.QueryRow(context.Background(), "SELECT datacenter_id, machine_id, token FROM "+sa+".snowflake_lease_take('orders-api', 60000)").Scan(&dc, &m, &token); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), "SELECT "+sa+".snowflake_lease_reserve(7, 7, 'db3')"); err != nil {
		t.Fatal(err)
	}
	var fdc, fm, ftoken int64
	if err := conn.QueryRow(context.Background(), "SELECT datacenter_id, machine_id, token FROM "+sa+".snowflake_lease_take('fast', 60000)").Scan(&fdc, &fm, &ftoken); err != nil {
		t.Fatal(err)
	}
	// Its last ID 20 s ahead of the database's clock, read in the same
	// statement.
	if _, err := conn.Exec(context.Background(), "SELECT "+sa+".snowflake_lease_release($1::integer, $2::integer, $3::bigint, pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint + 20000)",
		fdc, fm, ftoken); err != nil {
		t.Fatal(err)
	}
	// The same schema name in the other database, with the leased node.
	sb := installSchema(t, b, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: dc, Machine: m}) // the same name, from the test's
	code, out, errOut := sfgen(t, "node", "--dsn", a, "--dsn", b, "--schema", sa)
	for _, want := range []string{
		fmt.Sprintf("  leased: datacenter %d, machine %d, to orders-api\n", dc, m),
		"  reserved: datacenter 7, machine 7, for db3\n",
		fmt.Sprintf("  ahead: datacenter %d, machine %d: its high-water mark is ", fdc, fm),
		fmt.Sprintf("shared node: datacenter %d, machine %d in layout twitter: the lease of orders-api in ", dc, m),
		"FAIL: 1 pair of makers (schemas, leases, reservations) shares a node",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("node fleet: stdout lacks %q:\n%s", want, out)
		}
	}
	if code != exitFail || sb != sa {
		t.Errorf("node fleet: exit %d (stderr %q); want 1", code, errOut)
	}
}

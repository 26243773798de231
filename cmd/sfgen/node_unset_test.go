package main

// Tests of "no silent node": install, sql and migration without node
// flags give a first install the node of the installing session's
// settings sfgen.datacenter and sfgen.machine, or none, and
// snowflake_next_id() then refuses (SQLSTATE SF201) until `sfgen node`
// sets one. Every ID is decoded with the Go layout, not with the
// database's own functions.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// errNoNodeCode is the SQLSTATE of snowflake_next_id() without a node.
const errNoNodeCode = "SF201"

// withNodeSettings returns dsn with the session settings sfgen.datacenter
// and sfgen.machine, as a deployment would give them (PGOPTIONS, or
// options in the connection string).
func withNodeSettings(t *testing.T, dsn string, datacenter, machine int) string {
	t.Helper()
	return withOptions(t, dsn, fmt.Sprintf("-c sfgen.datacenter=%d -c sfgen.machine=%d", datacenter, machine))
}

// withOptions returns dsn with the connection parameter options (settings
// for the session, as -c name=value), in its query string.
func withOptions(t *testing.T, dsn, options string) string {
	t.Helper()
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " options='" + options + "'" // keyword/value: a later keyword wins
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("options", options)
	// %20, not the + of Encode: pgx reads a + in the query as a +.
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
	return u.String()
}

// makeIDs creates table schema.t, whose id defaults to
// snowflake_next_id(), if it is not there, and inserts n rows on a
// connection to dsn, returning their IDs or the error.
func makeIDs(t *testing.T, dsn, schema string, n int) ([]snowflake.ID, error) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+schema+".t (id bigint PRIMARY KEY DEFAULT "+schema+".snowflake_next_id(), n int)"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "INSERT INTO "+schema+".t (n) SELECT g FROM pg_catalog.generate_series(1, $1) g RETURNING id", n)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[snowflake.ID])
	return ids, err
}

// wantNode checks that every ID decodes, in Twitter's layout, to node
// datacenter/machine.
func wantNode(t *testing.T, what string, ids []snowflake.ID, datacenter, machine int64) {
	t.Helper()
	if len(ids) == 0 {
		t.Errorf("%s: no IDs", what)
	}
	for _, id := range ids {
		p, err := snowflake.Twitter().Decompose(id)
		if err != nil || p.Datacenter != datacenter || p.Machine != machine {
			t.Errorf("%s: ID %d decodes to %+v, %v; want datacenter %d, machine %d", what, id, p, err, datacenter, machine)
			return
		}
	}
}

// wantNoNode checks that err is snowflake_next_id()'s refusal for want of
// a node in schema, naming the fix in its message (which drivers' Error()
// show; not all show the hint).
func wantNoNode(t *testing.T, what string, ids []snowflake.ID, err error, schema string) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Errorf("%s: IDs %v, error %v; want SQLSTATE %s", what, ids, err, errNoNodeCode)
		return
	}
	if pgErr.Code != errNoNodeCode || !strings.Contains(pgErr.Message, "no node is set for schema "+schema) ||
		!strings.Contains(pgErr.Message, "sfgen node --schema "+schema+" --datacenter N --machine N") {
		t.Errorf("%s: error %s %q, hint %q; want %s, no node for schema %s and the sfgen node command", what, pgErr.Code, pgErr.Message, pgErr.Hint, errNoNodeCode, schema)
	}
}

// nodeOf runs `sfgen node` on schema and returns its exit status and
// output.
func nodeOf(t *testing.T, dsn, schema string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return sfgen(t, append([]string{"node", "--dsn", dsn, "--schema", schema}, args...)...)
}

// TestInstallWithoutNode: `sfgen install` without node flags on a fresh
// database leaves the node unset and says so; snowflake_next_id() refuses
// with SF201, naming `sfgen node`; `sfgen node` shows "no node", refuses
// one flag alone, and sets both, after which IDs carry that node.
func TestInstallWithoutNode(t *testing.T) {
	dsn := pgtest.DSN(t)
	const schema = "public"
	code, out, errOut := sfgen(t, "install", "--dsn", dsn) // no flags at all
	var want strings.Builder
	fmt.Fprintf(&want, "applied %s\n", sqlgen.MigrationName(sqlgen.Latest))
	fmt.Fprintf(&want, "schema %s is at sfgen release %d\n", schema, sqlgen.Latest)
	fmt.Fprintf(&want, "ID-making: the owner alone (other roles that insert need it: --grant ROLE, or SELECT %s.snowflake_grant('ROLE'))\n", pgident.Quote(schema))
	if code != 0 || out != want.String() {
		t.Fatalf("install without node flags: exit %d, %q, %q; want 0 and\n%s", code, out, errOut, want.String())
	}
	if !strings.HasPrefix(errOut, "sfgen install: no node is set, so snowflake_next_id() refuses to make IDs") ||
		!strings.Contains(errOut, "sfgen node --schema "+schema+" --datacenter N --machine N") {
		t.Errorf("install without node flags: stderr %q; want the no-node warning with the sfgen node command", errOut)
	}
	oneLine(t, errOut)

	ids, err := makeIDs(t, dsn, schema, 3)
	wantNoNode(t, "IDs without a node", ids, err, schema)

	where := fmt.Sprintf("(schema %s, sfgen release %d, layout twitter)\n", schema, sqlgen.Latest)
	code, out, errOut = nodeOf(t, dsn, schema)
	if code != 0 || out != "no node "+where || !strings.Contains(errOut, "sfgen node --schema "+schema+" --datacenter N --machine N") {
		t.Errorf("node on an unset schema: exit %d, %q, %q; want 0, %q and a hint", code, out, errOut, "no node "+where)
	}
	oneLine(t, errOut)

	for _, args := range [][]string{{"--machine", "3"}, {"--datacenter", "1"}} {
		code, out, errOut = nodeOf(t, dsn, schema, args...)
		if want := "sfgen node: " + args[0] + " " + args[1] + " without --"; code != 2 || out != "" || !strings.HasPrefix(errOut, want) {
			t.Errorf("node %v on an unset schema: exit %d, %q, %q; want 2 and %q", args, code, out, errOut, want)
		}
	}
	if code, out, _ = nodeOf(t, dsn, schema); out != "no node "+where {
		t.Errorf("after the refused node flags: %q; want still no node", out)
	}

	code, out, errOut = nodeOf(t, dsn, schema, "--datacenter", "1", "--machine", "3")
	if want := "no node -> datacenter 1, machine 3 " + where; code != 0 || out != want || errOut != "" {
		t.Errorf("node --datacenter 1 --machine 3: exit %d, %q, %q; want 0, %q, no stderr", code, out, errOut, want)
	}
	ids, err = makeIDs(t, dsn, schema, 100)
	if err != nil {
		t.Fatalf("IDs after sfgen node: %v", err)
	}
	wantNode(t, "IDs after sfgen node", ids, 1, 3)
	if code, out, _ = nodeOf(t, dsn, schema); out != "datacenter 1, machine 3 "+where {
		t.Errorf("node after setting it: %q", out)
	}
}

// TestInstallNodeFromSettings: the same install, on a connection with the
// settings sfgen.datacenter=4 and sfgen.machine=5, gets node 4/5, kept
// for every later session (the IDs are made on a connection without the
// settings). Half the settings, or a value that is not a number, is an
// error that names both.
func TestInstallNodeFromSettings(t *testing.T) {
	dsn := pgtest.DSN(t)
	_, schema := testSchema(t, dsn)
	code, out, errOut := sfgen(t, "install", "--dsn", withNodeSettings(t, dsn, 4, 5), "--schema", schema)
	if code != 0 || errOut != "" || !strings.Contains(out, fmt.Sprintf("schema %s is at sfgen release %d\n", schema, sqlgen.Latest)) {
		t.Fatalf("install with the node settings: exit %d, %q, %q; want 0 and no warning", code, out, errOut)
	}
	if code, out, _ := nodeOf(t, dsn, schema); code != 0 || !strings.HasPrefix(out, "datacenter 4, machine 5 (") {
		t.Errorf("node after install with the settings: %d %q; want 4/5", code, out)
	}
	ids, err := makeIDs(t, dsn, schema, 100)
	if err != nil {
		t.Fatal(err)
	}
	wantNode(t, "IDs after install with the settings", ids, 4, 5)

	for _, tc := range []struct{ options, want string }{
		{"-c sfgen.datacenter=4", "the settings sfgen.datacenter ('4') and sfgen.machine (unset) must both be whole numbers"},
		{"-c sfgen.datacenter=4 -c sfgen.machine=x", "the settings sfgen.datacenter ('4') and sfgen.machine ('x') must both be whole numbers"},
	} {
		dsn := pgtest.DSN(t)
		code, out, errOut := sfgen(t, "install", "--dsn", withOptions(t, dsn, tc.options), "--schema", "ids")
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("install with %q: exit %d, %q, %q; want 1 and %q", tc.options, code, out, errOut, tc.want)
		}
		oneLine(t, errOut)
	}
}

// TestInstallBadNodeSettingsLeavesNothing: a first install whose node
// settings are refused leaves the database as it was, not at the latest
// release with the node 0/0 that release 1 sets (which a second install
// would then adopt, silently: "nothing to apply").
func TestInstallBadNodeSettingsLeavesNothing(t *testing.T) {
	dsn := pgtest.DSN(t)
	code, _, errOut := sfgen(t, "install", "--dsn", withOptions(t, dsn, "-c sfgen.datacenter=4"), "--schema", "ids")
	if code != 1 {
		t.Fatalf("install with half the settings: exit %d, %q; want 1", code, errOut)
	}
	if code, out, errOut := nodeOf(t, dsn, "ids"); code != 1 || !strings.Contains(errOut, "not installed") {
		t.Errorf("after the failed install: node = %d, %q, %q; want not installed", code, out, errOut)
	}
	code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "ids")
	if code != 0 || !strings.Contains(errOut, "no node is set") {
		t.Errorf("install again without settings: exit %d, %q, %q; want a first install with no node", code, out, errOut)
	}
	// In a schema that was there before (public): nothing left in it
	// either, not even the node the failed install made first.
	if code, _, errOut := sfgen(t, "install", "--dsn", withOptions(t, dsn, "-c sfgen.datacenter=4 -c sfgen.machine=x")); code != 1 ||
		!strings.Contains(errOut, "must both be whole numbers") {
		t.Fatalf("install into public with a bad setting: exit %d, %q; want 1", code, errOut)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var left string
	if err := db.QueryRow(`SELECT COALESCE(pg_catalog.string_agg(p.proname, ', '), '') FROM pg_catalog.pg_proc p
		WHERE p.pronamespace = 'public'::pg_catalog.regnamespace AND p.proname LIKE 'snowflake%'`).Scan(&left); err != nil || left != "" {
		t.Errorf("after the failed install into public, it holds functions %q (%v); want none", left, err)
	}
}

// TestMigrationWithoutNode: one file from `sfgen migration` without node
// flags, applied with goose to three databases, gives each the node of
// the settings of goose's session there, and the one without settings
// none.
func TestMigrationWithoutNode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the goose command")
	}
	goose := gooseCLI(t)
	dir := t.TempDir()
	code, out, errOut := sfgen(t, "migration", "--dir", dir, "--sequential", "--schema", "ids")
	path := filepath.Join(dir, "00001_sfgen_snowflake.sql")
	if code != 0 || out != path+"\n" || errOut != "" {
		t.Fatalf("migration without node flags = %d, %q, %q; want %s", code, out, errOut, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "snowflake_set_node(0, 0)") {
		t.Errorf("the migration sets node 0/0 itself")
	}
	for _, tc := range []struct {
		name                string
		settings            bool
		datacenter, machine int
	}{
		{"settings 1/2", true, 1, 2},
		{"settings 7/9", true, 7, 9},
		{"no settings", false, 0, 0},
	} {
		dsn := pgtest.DSN(t)
		gooseDSN := dsn
		if tc.settings {
			gooseDSN = withNodeSettings(t, dsn, tc.datacenter, tc.machine)
		}
		gooseIn(t, goose, dir, "public.goose_db_version", gooseDSN)("up")
		ids, err := makeIDs(t, dsn, "ids", 50)
		code, out, _ := nodeOf(t, dsn, "ids")
		if !tc.settings {
			wantNoNode(t, tc.name, ids, err, "ids")
			if code != 0 || !strings.HasPrefix(out, "no node (schema ids, ") {
				t.Errorf("%s: node = %d, %q; want no node", tc.name, code, out)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: IDs: %v", tc.name, err)
			continue
		}
		wantNode(t, tc.name, ids, int64(tc.datacenter), int64(tc.machine))
		if want := fmt.Sprintf("datacenter %d, machine %d (schema ids, sfgen release %d,", tc.datacenter, tc.machine, sqlgen.Latest); code != 0 || !strings.HasPrefix(out, want) {
			t.Errorf("%s: node = %d, %q; want %q...", tc.name, code, out, want)
		}
	}
}

// TestInstallOverUnsetNode: on a schema whose node is unset, install with
// node flags is refused (exit 2, nothing changed) and points at `sfgen
// node`, which sets it; install does not set a node over one nobody chose.
func TestInstallOverUnsetNode(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := installSchema(t, dsn, sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true})
	code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", schema, "--datacenter", "1", "--machine", "1")
	want := "sfgen install: schema " + schema + " already has sfgen, with no node set, and install keeps a schema's node; set it with 'sfgen node --schema " + schema + " --datacenter N --machine N'\n"
	if code != 2 || out != "" || errOut != want {
		t.Errorf("install --datacenter 1 --machine 1 over an unset node: exit %d, %q, %q; want 2 and %q", code, out, errOut, want)
	}
	if code, out, _ := nodeOf(t, dsn, schema); code != 0 || !strings.HasPrefix(out, "no node (") {
		t.Errorf("after the refused install: node = %d, %q; want still no node", code, out)
	}
	ids, err := makeIDs(t, dsn, schema, 1)
	wantNoNode(t, "after the refused install", ids, err, schema)
}

// TestNodeFleetUnset: the fleet check lists a schema without a node as
// "no node set" and never pairs it, with another unset one or with a
// schema whose node is 0/0 (what an unset node would read as); pairs of
// set nodes are still found beside them.
func TestNodeFleetUnset(t *testing.T) {
	unsetLine := fmt.Sprintf("no node set (snowflake_next_id() refuses to make IDs), layout twitter, sfgen release %d", sqlgen.Latest)
	setLine := func(dc, m int64) string {
		return fmt.Sprintf("datacenter %d, machine %d, layout twitter, sfgen release %d", dc, m, sqlgen.Latest)
	}
	unset := sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true}
	for _, tc := range []struct {
		name   string
		dbs    []sqlgen.Options
		code   int
		shared [][2]int
	}{
		{"two unset", []sqlgen.Options{unset, unset}, 0, nil},
		{"unset beside 0/0", []sqlgen.Options{unset, {Layout: snowflake.Twitter()}, unset}, 0, nil},
		{"unset beside a shared pair", []sqlgen.Options{unset, {Layout: snowflake.Twitter(), Datacenter: 1, Machine: 1}, unset, {Layout: snowflake.Twitter(), Datacenter: 1, Machine: 1}}, 1, [][2]int{{1, 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"node"}
			var names []string
			schema := ""
			for _, o := range tc.dbs {
				dsn := pgtest.DSN(t)
				schema = installSchema(t, dsn, o)
				args = append(args, "--dsn", dsn)
				names = append(names, nodeName(t, dsn))
			}
			args = append(args, "--schema", schema)
			code, out, errOut := sfgen(t, args...)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if code != tc.code || errOut != "" || len(lines) < len(tc.dbs)+1 {
				t.Fatalf("exit %d, stderr %q, stdout:\n%s\nwant exit %d", code, errOut, out, tc.code)
			}
			for i, o := range tc.dbs {
				want := names[i] + " schema " + schema + ": " + setLine(o.Datacenter, o.Machine)
				if o.UnsetNode {
					want = names[i] + " schema " + schema + ": " + unsetLine
				}
				if lines[i] != want {
					t.Errorf("line %d = %q; want %q", i, lines[i], want)
				}
			}
			var pairs []string
			for _, line := range lines[len(tc.dbs):] {
				if strings.HasPrefix(line, "shared node: ") {
					pairs = append(pairs, line)
				}
			}
			var want []string
			for _, p := range tc.shared {
				want = append(want, fmt.Sprintf("shared node: datacenter 1, machine 1 in layout twitter: %s schema %s and %s schema %s", names[p[0]], schema, names[p[1]], schema))
			}
			if strings.Join(pairs, "\n") != strings.Join(want, "\n") {
				t.Errorf("pairs:\n%s\nwant:\n%s", strings.Join(pairs, "\n"), strings.Join(want, "\n"))
			}
			if last := lines[len(lines)-1]; (tc.code == 0) != strings.HasPrefix(last, "ok: ") {
				t.Errorf("last line %q with exit %d", last, code)
			}

			// --json: node_set false for the unset ones, and the same pairs.
			code, out, _ = sfgen(t, append(args, "--json")...)
			var got struct {
				OK      bool `json:"ok"`
				Targets []struct {
					Installed bool `json:"installed"`
					NodeSet   bool `json:"node_set"`
				} `json:"targets"`
				Shared []struct{ A, B int } `json:"shared"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil || code != tc.code || got.OK != (tc.code == 0) || len(got.Targets) != len(tc.dbs) || len(got.Shared) != len(tc.shared) {
				t.Fatalf("--json: exit %d, %v: %s", code, err, out)
			}
			for i, o := range tc.dbs {
				if g := got.Targets[i]; !g.Installed || g.NodeSet != !o.UnsetNode {
					t.Errorf("--json target %d = %+v; want installed, node_set %v", i, g, !o.UnsetNode)
				}
			}
			for i, p := range tc.shared {
				if s := got.Shared[i]; s.A != p[0] || s.B != p[1] {
					t.Errorf("--json shared %d = %+v; want %v", i, s, p)
				}
			}
		})
	}
}

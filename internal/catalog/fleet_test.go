package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestCompareFleet: CompareFleet reports each pair of targets with one
// node in one layout, in order; never a pair of different layouts, nor a
// target without a node set, nor one that could not be read, nor the same
// schema reached again (which gets SameAs); it counts the targets that
// could not be read, and OK is neither.
func TestCompareFleet(t *testing.T) {
	custom, err := snowflake.ParseLayout("epoch=1600000000000 timestamp=41 datacenter=4 machine=6 sequence=12")
	if err != nil {
		t.Fatal(err)
	}
	public := catalog.Public
	// node is a target of key with node dc/m in layout l.
	node := func(key string, l snowflake.Layout, dc, m int64) catalog.FleetTarget {
		return catalog.FleetTargetOf("db", key, catalog.Installed{Schema: public, Layout: l, Release: sqlgen.Latest,
			Node: catalog.Node{State: catalog.NodeSet, Datacenter: dc, Machine: m}})
	}
	tw := func(key string, dc, m int64) catalog.FleetTarget { return node(key, snowflake.Twitter(), dc, m) }
	unset := func(key string) catalog.FleetTarget {
		return catalog.FleetTargetOf("db", key, catalog.Installed{Schema: public, Layout: snowflake.Twitter(), Release: sqlgen.Latest,
			Node: catalog.Node{State: catalog.NodeUnset}})
	}
	// failed could not be read; what else it says is not compared.
	failed := tw("x", 1, 1)
	failed.Error = "connection refused"
	idx := func(i int) *int { return &i }
	type shared struct {
		a, b   int
		dc, m  int64
		layout string
	}
	for _, tc := range []struct {
		name    string
		targets []catalog.FleetTarget
		shared  []shared
		sameAs  map[int]int
		failed  int
	}{
		{"none", nil, nil, nil, 0},
		{"one", []catalog.FleetTarget{tw("a", 1, 1)}, nil, nil, 0},
		{"same node, same layout", []catalog.FleetTarget{tw("a", 1, 1), tw("b", 2, 2), tw("c", 1, 1)},
			[]shared{{0, 2, 1, 1, "twitter"}}, nil, 0},
		{"all share, each pair once, in order", []catalog.FleetTarget{tw("a", 0, 0), tw("b", 0, 0), tw("c", 0, 0)},
			[]shared{{0, 1, 0, 0, "twitter"}, {0, 2, 0, 0, "twitter"}, {1, 2, 0, 0, "twitter"}}, nil, 0},
		{"a custom layout shared", []catalog.FleetTarget{node("a", custom, 9, 40), node("b", custom, 9, 40)},
			[]shared{{0, 1, 9, 40, custom.String()}}, nil, 0},
		{"same datacenter, another machine", []catalog.FleetTarget{tw("a", 1, 1), tw("b", 1, 2)}, nil, nil, 0},
		{"same machine, another datacenter", []catalog.FleetTarget{tw("a", 1, 1), tw("b", 2, 1)}, nil, nil, 0},
		{"different layouts not compared", []catalog.FleetTarget{tw("a", 1, 1), node("b", snowflake.Discord(), 1, 1), node("c", custom, 1, 1)}, nil, nil, 0},
		{"same schema reached twice", []catalog.FleetTarget{tw("a", 3, 4), tw("a", 3, 4)}, nil, map[int]int{1: 0}, 0},
		{"reached three times and a clone", []catalog.FleetTarget{tw("a", 3, 4), tw("a", 3, 4), tw("clone", 3, 4), tw("a", 3, 4)},
			[]shared{{0, 2, 3, 4, "twitter"}}, map[int]int{1: 0, 3: 0}, 0},
		{"no key is never the same schema", []catalog.FleetTarget{tw("", 3, 4), tw("", 3, 4)}, []shared{{0, 1, 3, 4, "twitter"}}, nil, 0},
		{"unset nodes not compared", []catalog.FleetTarget{unset("a"), unset("b"), tw("c", 0, 0)}, nil, nil, 0},
		{"no sfgen not compared", []catalog.FleetTarget{
			catalog.FleetTargetOf("db", "a", catalog.Installed{Schema: public}),
			catalog.FleetTargetOf("db", "b", catalog.Installed{Schema: public}),
			catalog.FleetTargetOf("db", "c", catalog.Installed{Schema: public, Layout: snowflake.Twitter(), Release: 1}),
			catalog.FleetTargetOf("db", "d", catalog.Installed{Schema: public, Layout: snowflake.Twitter(), Release: 1}),
		}, nil, nil, 0},
		{"errors counted, not compared", []catalog.FleetTarget{failed, tw("a", 1, 1), failed, tw("b", 2, 2)}, nil, nil, 2},
		{"an error and a shared node", []catalog.FleetTarget{tw("a", 1, 1), failed, tw("b", 1, 1)}, []shared{{0, 2, 1, 1, "twitter"}}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fmt.Sprintf("%+v", tc.targets)
			r := catalog.CompareFleet(tc.targets)
			if after := fmt.Sprintf("%+v", tc.targets); after != before {
				t.Errorf("CompareFleet changed its argument: %s, was %s", after, before)
			}
			want := []catalog.SharedNode{}
			for _, s := range tc.shared {
				want = append(want, catalog.SharedNode{A: s.a, B: s.b, AMaker: "node", BMaker: "node", Datacenter: s.dc, Machine: s.m, Layout: s.layout})
			}
			if !reflect.DeepEqual(r.Shared, want) {
				t.Errorf("Shared = %+v; want %+v", r.Shared, want)
			}
			if r.Failed != tc.failed {
				t.Errorf("Failed = %d; want %d", r.Failed, tc.failed)
			}
			if ok := len(want) == 0 && tc.failed == 0; r.OK != ok {
				t.Errorf("OK = %v; want %v", r.OK, ok)
			}
			if len(r.Targets) != len(tc.targets) {
				t.Fatalf("%d targets; want %d", len(r.Targets), len(tc.targets))
			}
			for i, g := range r.Targets {
				var wantSame *int
				if j, ok := tc.sameAs[i]; ok {
					wantSame = idx(j)
				}
				if !reflect.DeepEqual(g.SameAs, wantSame) {
					t.Errorf("target %d: SameAs = %v; want %v", i, g.SameAs, wantSame)
				}
				g.SameAs = tc.targets[i].SameAs
				if !reflect.DeepEqual(g, tc.targets[i]) {
					t.Errorf("target %d = %+v; want %+v, as given", i, g, tc.targets[i])
				}
			}
		})
	}
}

// TestFleetTarget: a target says what Inspect read: the node of a schema
// with one set, a schema with sfgen and no node set, the function a
// schema without sfgen lacks.
func TestFleetTarget(t *testing.T) {
	s := schema(t, "ids")
	for _, tc := range []struct {
		name string
		in   catalog.Installed
		want catalog.FleetTarget
	}{
		{"node set", catalog.Installed{Schema: s, Layout: snowflake.Discord(), Release: 3, Node: catalog.Node{State: catalog.NodeSet, Datacenter: 7, Machine: 9}},
			catalog.FleetTarget{Installed: true, NodeSet: true, Datacenter: 7, Machine: 9, Layout: "discord", Release: 3}},
		{"no node set", catalog.Installed{Schema: s, Layout: snowflake.Twitter(), Release: 3, Node: catalog.Node{State: catalog.NodeUnset}},
			catalog.FleetTarget{Installed: true, Layout: "twitter", Release: 3}},
		{"no snowflake_node()", catalog.Installed{Schema: s, Layout: snowflake.Twitter(), Release: 1},
			catalog.FleetTarget{Layout: "twitter", Release: 1, Lacks: catalog.FuncNode}},
		{"no sfgen", catalog.Installed{Schema: s}, catalog.FleetTarget{Lacks: catalog.FuncLayout}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := catalog.FleetTargetOf("app@db:5432/app", "k", tc.in)
			tc.want.Database, tc.want.Schema = "app@db:5432/app", "ids"
			// Compare the exported fields (the layout and key are not).
			g, w := fmt.Sprintf("%#v", exported(got)), fmt.Sprintf("%#v", exported(tc.want))
			if g != w {
				t.Errorf("target = %s; want %s", g, w)
			}
		})
	}
}

// exported returns t's exported fields.
func exported(t catalog.FleetTarget) []any {
	v := reflect.ValueOf(t)
	var out []any
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() {
			out = append(out, v.Field(i).Interface())
		}
	}
	return out
}

// TestFleetReportJSON: a report's JSON is 'sfgen node --json's, field
// for field.
func TestFleetReportJSON(t *testing.T) {
	a := catalog.FleetTargetOf("u@h:5432/a", "k", catalog.Installed{Schema: catalog.Public, Layout: snowflake.Twitter(), Release: 3,
		Node: catalog.Node{State: catalog.NodeSet, Datacenter: 3, Machine: 4}})
	r := catalog.CompareFleet([]catalog.FleetTarget{
		a, a,
		catalog.FleetTargetOf("u@h:5432/b", "k2", catalog.Installed{Schema: catalog.Public, Layout: snowflake.Twitter(), Release: 3,
			Node: catalog.Node{State: catalog.NodeSet, Datacenter: 3, Machine: 4}}),
		catalog.FleetTargetOf("u@h:5432/c", "k3", catalog.Installed{Schema: catalog.Public}),
		{Database: "u@h:5432/d", Schema: "public", Error: "refused"},
	})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"ok":false,"targets":[` +
		`{"database":"u@h:5432/a","schema":"public","installed":true,"node_set":true,"datacenter":3,"machine":4,"layout":"twitter","release":3},` +
		`{"database":"u@h:5432/a","schema":"public","installed":true,"node_set":true,"datacenter":3,"machine":4,"layout":"twitter","release":3,"same_as":0},` +
		`{"database":"u@h:5432/b","schema":"public","installed":true,"node_set":true,"datacenter":3,"machine":4,"layout":"twitter","release":3},` +
		`{"database":"u@h:5432/c","schema":"public","installed":false,"node_set":false,"datacenter":0,"machine":0},` +
		`{"database":"u@h:5432/d","schema":"public","installed":false,"node_set":false,"datacenter":0,"machine":0,"error":"refused"}],` +
		`"shared":[{"a":0,"b":2,"a_maker":"node","b_maker":"node","datacenter":3,"machine":4,"layout":"twitter"}]}`
	if string(b) != want {
		t.Errorf("JSON:\n%s\nwant\n%s", b, want)
	}
	if b, _ := json.Marshal(catalog.CompareFleet([]catalog.FleetTarget{a})); !strings.HasSuffix(string(b), `"shared":[]}`) {
		t.Errorf("no pair: %s; want shared [], not null", b)
	}
}

// TestReadDatabase: ReadDatabase reads each schema's node, layout and
// release through pgx and through database/sql alike; a schema it cannot
// inspect gets the error (through Redact) and the others are read; the
// same database read twice is the same schema reached again, and another
// database with the same node is a shared pair; a connection that fails
// gives every schema the error.
func TestReadDatabase(t *testing.T) {
	ctx := t.Context()
	conn, db := open(t)
	install := func(db *pgx.Conn, o sqlgen.Options) {
		t.Helper()
		b, err := sqlgen.Script(o)
		if err == nil {
			_, err = db.Exec(ctx, string(b))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	install(conn, sqlgen.Options{Schema: "ids", Layout: snowflake.Discord(), Datacenter: 1, Machine: 2})
	install(conn, sqlgen.Options{Schema: "unset", Layout: snowflake.Twitter(), UnsetNode: true})
	if _, err := conn.Exec(ctx, "CREATE SCHEMA bad; CREATE FUNCTION bad.snowflake_layout() RETURNS text LANGUAGE sql AS $$SELECT 'epoch=1'$$"); err != nil {
		t.Fatal(err)
	}
	d := catalog.FleetDatabase{Name: "first", Redact: func(err error) string { return "said: " + err.Error() }}
	for _, s := range []string{"ids", "unset", "public", "bad"} {
		d.Schemas = append(d.Schemas, schema(t, s))
	}
	got := catalog.ReadDatabase(ctx, catalog.PGX(conn), d)
	if again := catalog.ReadDatabase(ctx, catalog.DB(db), d); !reflect.DeepEqual(got, again) {
		t.Errorf("through pgx:\n%+v\nthrough database/sql:\n%+v", got, again)
	}
	want := []catalog.FleetTarget{
		{Database: "first", Schema: "ids", Installed: true, NodeSet: true, Datacenter: 1, Machine: 2, Layout: "discord", Release: sqlgen.Latest},
		{Database: "first", Schema: "unset", Installed: true, Layout: "twitter", Release: sqlgen.Latest},
		{Database: "first", Schema: "public", Lacks: catalog.FuncLayout},
		{Database: "first", Schema: "bad"},
	}
	if len(got) != len(want) {
		t.Fatalf("ReadDatabase = %+v; want %d targets", got, len(want))
	}
	for i := range want {
		if i == 3 {
			if g := got[i]; !strings.HasPrefix(g.Error, "said: ") || !strings.Contains(g.Error, `returns "epoch=1"`) || g.Installed || g.Database != "first" || g.Schema != "bad" {
				t.Errorf("schema bad: %+v; want the error, redacted", g)
			}
			continue
		}
		if g, w := fmt.Sprintf("%#v", exported(got[i])), fmt.Sprintf("%#v", exported(want[i])); g != w {
			t.Errorf("target %d = %s; want %s", i, g, w)
		}
	}

	// Another database on the same server with the same node.
	other := pgtest.DSN(t)
	oconn, err := pgx.Connect(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	defer oconn.Close(context.Background())
	install(oconn, sqlgen.Options{Schema: "ids", Layout: snowflake.Discord(), Datacenter: 1, Machine: 2})
	ids := []catalog.Schema{schema(t, "ids")}
	var targets []catalog.FleetTarget
	targets = append(targets, catalog.ReadDatabase(ctx, catalog.PGX(conn), catalog.FleetDatabase{Name: "first", Schemas: ids})...)
	targets = append(targets, catalog.ReadDatabase(ctx, catalog.DB(db), catalog.FleetDatabase{Name: "first again", Schemas: ids})...)
	targets = append(targets, catalog.ReadDatabase(ctx, catalog.PGX(oconn), catalog.FleetDatabase{Name: "other", Schemas: ids})...)
	r := catalog.CompareFleet(targets)
	if r.OK || r.Failed != 0 || r.Targets[0].SameAs != nil || r.Targets[1].SameAs == nil || *r.Targets[1].SameAs != 0 || r.Targets[2].SameAs != nil ||
		!reflect.DeepEqual(r.Shared, []catalog.SharedNode{{A: 0, B: 2, AMaker: "node", BMaker: "node", Datacenter: 1, Machine: 2, Layout: "discord"}}) {
		t.Errorf("the first database twice and another: %+v; want the second the same as the first, the first and the other shared", r)
	}

	// Which server it is cannot be read: every schema gets the error.
	refuse := refusing{catalog.PGX(conn), "pg_control_system"}
	for _, g := range catalog.ReadDatabase(ctx, refuse, d) {
		if g.Error != "said: refused" || g.Installed {
			t.Errorf("the server unread: %+v; want the error, redacted", g)
		}
	}

	// A connection that fails: every schema gets the error.
	closed, err := pgx.Connect(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close(ctx)
	for _, g := range catalog.ReadDatabase(ctx, catalog.PGX(closed), d) {
		if g.Error == "" || !strings.HasPrefix(g.Error, "said: ") || g.Installed {
			t.Errorf("through a closed connection: %+v; want an error, redacted", g)
		}
	}
	for i, g := range d.Unreadable(errors.New("refused")) {
		if g.Error != "said: refused" || g.Database != "first" || g.Schema != d.Schemas[i].Name() {
			t.Errorf("Unreadable: %+v; want the error, redacted", g)
		}
	}
}

// refusing is a Querier that refuses the queries that contain what, and
// runs the others through q.
type refusing struct {
	q    catalog.Querier
	what string
}

func (r refusing) QueryRow(ctx context.Context, query string, args ...any) catalog.Row {
	if strings.Contains(query, r.what) {
		return errRow{errors.New("refused")}
	}
	return r.q.QueryRow(ctx, query, args...)
}

type errRow struct{ err error }

func (e errRow) Scan(...any) error { return e.err }

// TestReadDatabaseLeases: from release 4 a fleet check lists each
// schema's leases and reservations as makers beside its node, and expired
// rows whose high-water mark (the next holder's floor) is ahead of the
// database's clock by more than FutureBoundMs; a lease in one database
// and a schema's node in another, one node in one layout, are a shared
// pair. A role that may not read the lease table gets LeasesError.
func TestReadDatabaseLeases(t *testing.T) {
	ctx := context.Background()
	install := func(conn *pgx.Conn, o sqlgen.Options) {
		t.Helper()
		b, err := sqlgen.Script(o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, string(b)); err != nil {
			t.Fatal(err)
		}
	}
	dsn := pgtest.DSN(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	install(conn, sqlgen.Options{Schema: "ids", Layout: snowflake.Twitter(), Datacenter: 0, Machine: 0})
	var dc, m, token int64
	if err := conn.QueryRow(ctx, "SELECT datacenter_id, machine_id, token FROM ids.snowflake_lease_take('svc', 60000)").Scan(&dc, &m, &token); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT ids.snowflake_lease_reserve(5, 5, 'elsewhere')"); err != nil {
		t.Fatal(err)
	}
	// A fast holder's lease, given back with its last ID 30 s ahead.
	var fdc, fm, ftoken int64
	if err := conn.QueryRow(ctx, "SELECT datacenter_id, machine_id, token FROM ids.snowflake_lease_take('fast', 60000)").Scan(&fdc, &fm, &ftoken); err != nil {
		t.Fatal(err)
	}
	// 30 s ahead of the database's clock, read in the same statement.
	var setMs int64
	var released bool
	if err := conn.QueryRow(ctx, `SELECT c.ms, ids.snowflake_lease_release($1::integer, $2::integer, $3::bigint, c.ms + 30000)
		FROM (SELECT floor(date_part('epoch', clock_timestamp()) * 1000)::bigint AS ms) AS c`,
		fdc, fm, ftoken).Scan(&setMs, &released); err != nil || !released {
		t.Fatal(released, err)
	}
	other := pgtest.DSN(t)
	oconn, err := pgx.Connect(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	defer oconn.Close(ctx)
	install(oconn, sqlgen.Options{Schema: "ids", Layout: snowflake.Twitter(), Datacenter: dc, Machine: m})

	ids := []catalog.Schema{schema(t, "ids")}
	targets := catalog.ReadDatabase(ctx, catalog.PGX(conn), catalog.FleetDatabase{Name: "a", Schemas: ids})
	targets = append(targets, catalog.ReadDatabase(ctx, catalog.PGX(oconn), catalog.FleetDatabase{Name: "b", Schemas: ids})...)
	var doneMs int64 // the database's clock once the leases were read
	if err := conn.QueryRow(ctx, "SELECT floor(date_part('epoch', clock_timestamp()) * 1000)::bigint").Scan(&doneMs); err != nil {
		t.Fatal(err)
	}
	leases := targets[0].Leases
	kinds := map[string]catalog.FleetLease{}
	for _, l := range leases {
		kinds[l.Kind+" "+l.Holder] = l
	}
	if l, ok := kinds["lease svc"]; !ok || l.Datacenter != dc || l.Machine != m || l.AheadMs != 0 {
		t.Errorf("leases %+v; want svc's lease of %d/%d", leases, dc, m)
	}
	if l, ok := kinds["reservation elsewhere"]; !ok || l.Datacenter != 5 || l.Machine != 5 {
		t.Errorf("leases %+v; want the reservation of 5/5", leases)
	}
	// Read after the mark was set and before doneMs: at most 30 s ahead,
	// at least 30 s less the time between (unless that is within the
	// bound, on a machine slow enough to take 29 s).
	if minAhead := 30000 - (doneMs - setMs); minAhead <= catalog.FutureBoundMs {
		t.Logf("the database's clock moved %d ms from the mark to the read: too long to tell the mark ahead", doneMs-setMs)
	} else if l, ok := kinds["expired fast"]; !ok || l.AheadMs < minAhead || l.AheadMs > 30000 {
		t.Errorf("leases %+v; want fast's expired row from %d to 30000 ms ahead", leases, minAhead)
	}
	if len(leases) != 3 || targets[0].LeasesError != "" {
		t.Errorf("leases %+v (%q); want the three", leases, targets[0].LeasesError)
	}
	r := catalog.CompareFleet(targets)
	want := []catalog.SharedNode{{A: 0, B: 1, AMaker: "lease of svc", BMaker: "node", Datacenter: dc, Machine: m, Layout: "twitter"}}
	if r.OK || !reflect.DeepEqual(r.Shared, want) {
		t.Errorf("Shared = %+v; want %+v", r.Shared, want)
	}

	// A role that may not read the table.
	_, roleDSN := pgtest.LoginRole(t, dsn, "reader", "")
	rconn, err := pgx.Connect(ctx, roleDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer rconn.Close(ctx)
	if _, err := conn.Exec(ctx, "GRANT USAGE ON SCHEMA ids TO "+rconn.Config().User); err != nil {
		t.Fatal(err)
	}
	rt := catalog.ReadDatabase(ctx, catalog.PGX(rconn), catalog.FleetDatabase{Name: "a", Schemas: ids})
	if rt[0].Error != "" || rt[0].Leases != nil || !strings.Contains(rt[0].LeasesError, "may not read ids_sfgen.snowflake_lease") {
		t.Errorf("as a role without access: %+v; want LeasesError", rt[0])
	}

	// No lease table at all (a copy of the functions alone): said so, not
	// "may not read".
	if _, err := conn.Exec(ctx, "DROP TABLE ids_sfgen.snowflake_lease CASCADE"); err != nil {
		t.Fatal(err)
	}
	rt = catalog.ReadDatabase(ctx, catalog.PGX(conn), catalog.FleetDatabase{Name: "a", Schemas: ids})
	if rt[0].Error != "" || rt[0].Leases != nil || !strings.Contains(rt[0].LeasesError, "there is no lease table ids_sfgen.snowflake_lease") {
		t.Errorf("without a lease table: %+v; want LeasesError saying so", rt[0])
	}
}

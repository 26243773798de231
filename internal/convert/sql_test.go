package convert

import (
	"strings"
	"testing"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlcheck"
)

// testPlan is a plan of every part the script has: an identity dropped,
// an integer key widened with a column that references it.
func testPlan() *Plan {
	p := &Plan{o: Options{LockTimeout: 2 * time.Second}, Sfgen: "ids", Layout: snowflake.Twitter(),
		Node: catalog.Node{State: catalog.NodeSet, Datacenter: 1, Machine: 2}, Record: "ids_sfgen." + RecordTable,
		Key:      Column{Schema: "app", Table: `we"ird`, Column: "id", Type: "integer"},
		Identity: "ALWAYS", Sequence: "app.seq",
		Referencing: []Column{{Schema: "app", Table: "child", Column: "parent_id", Type: "integer", Via: "child_parent_id_fkey"}},
		Rewrites:    []Rewrite{{Table: `app.we"ird`, Rows: 10, Bytes: 8192}, {Table: "app.child", Rows: 10, Bytes: 8192}},
		Locks:       []string{`app.we"ird`, "app.child"},
		locksQ:      []string{`"app"."we""ird"`, `"app"."child"`}}
	return p
}

// TestStatementsQualified: every statement of the package, the script
// with all its parts included, binds every operator, function and type
// to pg_catalog or to the schemas it names (sfgen's, its private one,
// the table's).
func TestStatementsQualified(t *testing.T) {
	sqlcheck.SkipUnsupported(t)
	p := testPlan()
	d, err := p.data()
	if err != nil {
		t.Fatal(err)
	}
	tq := pgident.Quote("app") + "." + pgident.Quote("child")
	for _, st := range []struct {
		name string
		data any
	}{
		{"table", nil}, {"primary_key", nil}, {"column", nil}, {"sequence_users", nil}, {"referencing", nil},
		{"dependents", nil}, {"size", struct{ TableQ, TableL string }{tq, pgident.QuoteLiteral(tq)}},
		{"state", d}, {"recorded", d}, {"record_tables", nil}, {"script", d},
		{"lock_timeout", int64(2000)}, {"lock", tq},
	} {
		q, err := render(st.name, st.data)
		if err != nil {
			t.Fatal(err)
		}
		if f := sqlcheck.Check([]byte(q), sqlcheck.Options{OwnSchemas: []string{`"ids"`, `"ids_sfgen"`, `"app"`}}); len(f) > 0 {
			t.Errorf("%s:\n%s\nfindings: %v", st.name, q, f)
		}
	}
	script, err := render("script", d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`ALTER TABLE "app"."we""ird" ALTER COLUMN "id" DROP IDENTITY;`,
		`ALTER TABLE "app"."child" ALTER COLUMN "parent_id" TYPE bigint;` + "\n" + `ALTER TABLE "app"."we""ird" ALTER COLUMN "id" TYPE bigint;`,
		`LOCK TABLE ONLY "app"."we""ird" IN ACCESS EXCLUSIVE MODE;` + "\n" + `LOCK TABLE ONLY "app"."child" IN ACCESS EXCLUSIVE MODE;`,
		`SET LOCAL lock_timeout = '2000ms';`,
		"ON CONFLICT DO NOTHING",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("the script lacks %q:\n%s", want, script)
		}
	}
}

// TestNotesStayComments: a name with a newline cannot end a comment
// line of the script's notes and put SQL of its own after it (in the
// statements, names are quoted).
func TestNotesStayComments(t *testing.T) {
	p := testPlan()
	p.Key.Table = "x\nDROP TABLE app.child; --"
	p.Referencing[0].Via = "fk\rDROP TABLE app.child;"
	d, err := p.data()
	if err != nil {
		t.Fatal(err)
	}
	script, err := render("script", d)
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(script, "\nSET LOCAL lock_timeout")
	if !ok {
		t.Fatalf("no SET LOCAL lock_timeout:\n%s", script)
	}
	for _, l := range strings.Split(head, "\n") {
		if !strings.HasPrefix(l, "-- ") {
			t.Errorf("line %q of the notes is not a comment", l)
		}
	}
}

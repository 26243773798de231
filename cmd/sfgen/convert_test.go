package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/convert"
	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// twitterEpoch is the README's: id = ((t − 1288834974657) << 22) | (dc <<
// 17) | (m << 12) | seq.
const twitterEpoch = 1288834974657

// A convEnv is a database where role app, not a superuser, owns schema
// app (the tables) and sfgen in schema ids (installed by app, which has
// CREATE on the database for ids_sfgen), with node dc/m.
type convEnv struct {
	t            *testing.T
	dsn, appDSN  string
	super, app   *sql.DB
	role         string
	dc, m        int64
	sfgenFlags   []string
	tableSchema  string
	sfgenSchema  string
	privateTable string
}

func newConvEnv(t *testing.T, dc, m int64) *convEnv {
	t.Helper()
	dsn := pgtest.DSN(t)
	role, appDSN := pgtest.LoginRole(t, dsn, "app", "")
	e := &convEnv{t: t, dsn: dsn, appDSN: appDSN, role: role, dc: dc, m: m, super: testDB(t, dsn), app: testDB(t, appDSN),
		tableSchema: "app", sfgenSchema: "ids", privateTable: "ids_sfgen.snowflake_conversion"}
	var database string
	if err := e.super.QueryRow(`SELECT current_database()`).Scan(&database); err != nil {
		t.Fatal(err)
	}
	e.exec(e.super, "GRANT CREATE ON DATABASE "+pgx.Identifier{database}.Sanitize()+" TO "+role)
	if _, err := install.Apply(context.Background(), e.app, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: dc, Machine: m}); err != nil {
		t.Fatalf("install as %s: %v", role, err)
	}
	e.exec(e.app, "CREATE SCHEMA app")
	e.sfgenFlags = []string{"--dsn", appDSN, "--table-schema", "app", "--sfgen-schema", "ids"}
	return e
}

func (e *convEnv) exec(db *sql.DB, q string, args ...any) {
	e.t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
}

func (e *convEnv) convert(args ...string) (int, string, string) {
	e.t.Helper()
	return sfgen(e.t, append(append([]string{"convert"}, e.sfgenFlags...), args...)...)
}

// state is what a refused or dry conversion must leave as it was: each
// column's type and default, its identity, and whether the record table
// is there.
func (e *convEnv) state(cols ...string) string {
	e.t.Helper()
	var b strings.Builder
	for _, c := range cols {
		table, col, _ := strings.Cut(c, ".")
		var typ, def, ident string
		if err := e.super.QueryRow(`SELECT format_type(a.atttypid, a.atttypmod), COALESCE(pg_get_expr(d.adbin, d.adrelid), ''), a.attidentity::text
			FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			WHERE a.attrelid = ('app.' || quote_ident($1))::regclass AND a.attname = $2`, table, col).Scan(&typ, &def, &ident); err != nil {
			e.t.Fatalf("state of %s: %v", c, err)
		}
		fmt.Fprintf(&b, "%s %s default %q identity %q\n", c, typ, def, ident)
	}
	var record bool
	if err := e.super.QueryRow(`SELECT to_regclass($1) IS NOT NULL`, e.privateTable).Scan(&record); err != nil {
		e.t.Fatal(err)
	}
	fmt.Fprintf(&b, "record table %v\n", record)
	return b.String()
}

// nowMs is the database's clock.
func (e *convEnv) nowMs() int64 {
	e.t.Helper()
	var ms int64
	if err := e.super.QueryRow(`SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint`).Scan(&ms); err != nil {
		e.t.Fatal(err)
	}
	return ms
}

// checkID checks id with the README's formula: the database's node, a
// time from lo to hi (Unix ms).
func (e *convEnv) checkID(id, lo, hi int64) {
	e.t.Helper()
	ts := id>>22 + twitterEpoch
	if dc, m := id>>17&31, id>>12&31; dc != e.dc || m != e.m || ts < lo || ts > hi {
		e.t.Errorf("id %d: node %d/%d, time %d; want node %d/%d, time in [%d, %d]", id, dc, m, ts, e.dc, e.m, lo, hi)
	}
}

// TestConvertSerialParentAndChild is issue 24's first case: a serial
// parent with 5,000 rows and a child's integer foreign key to it. Without
// --rewrite convert exits 2 naming both tables and their sizes; --dry-run
// prints the SQL; neither changes anything. With --rewrite both columns
// become bigint, the foreign key holds, a new parent row gets a Snowflake
// ID of the node above every old value, a child row can reference it, and
// sfgen audit counts the 5,000 old values as legacy and exits 0.
func TestConvertSerialParentAndChild(t *testing.T) {
	e := newConvEnv(t, 3, 7)
	e.exec(e.app, `CREATE TABLE app.parent (id serial PRIMARY KEY, name text)`)
	e.exec(e.app, `INSERT INTO app.parent (name) SELECT 'p' || g FROM generate_series(1, 5000) g`)
	e.exec(e.app, `CREATE TABLE app.child (id serial PRIMARY KEY, parent_id integer NOT NULL REFERENCES app.parent (id))`)
	e.exec(e.app, `INSERT INTO app.child (parent_id) SELECT g FROM generate_series(1, 5000) g`)
	cols := []string{"parent.id", "child.parent_id"}
	before := e.state(cols...)
	if !strings.Contains(before, `parent.id integer default "nextval('app.parent_id_seq'::regclass)"`) {
		t.Fatalf("before: %s", before)
	}

	code, out, errOut := e.convert("--table", "parent")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "app.parent (5000 rows, ") || !strings.Contains(errOut, "app.child (5000 rows, ") ||
		!strings.Contains(errOut, "--rewrite") || !strings.Contains(errOut, "nothing changed") {
		t.Errorf("without --rewrite: exit %d, stdout %q, stderr %q; want 2 naming both tables, their rows and --rewrite", code, out, errOut)
	}
	oneLine(t, errOut)
	if got := e.state(cols...); got != before {
		t.Errorf("without --rewrite it changed:\n%s\nwas\n%s", got, before)
	}

	code, out, errOut = e.convert("--table", "parent", "--dry-run")
	if !strings.HasSuffix(out, "\n") {
		t.Errorf("--dry-run's output does not end with a newline: %q", out[max(0, len(out)-40):])
	}
	for _, want := range []string{
		"-- +goose Up\n",
		`ALTER TABLE "app"."parent" ALTER COLUMN "id" SET DEFAULT "ids".snowflake_next_id();`,
		`ALTER TABLE "app"."child" ALTER COLUMN "parent_id" TYPE bigint;`,
		`ALTER TABLE "app"."parent" ALTER COLUMN "id" TYPE bigint;`,
		`LOCK TABLE ONLY "app"."parent" IN ACCESS EXCLUSIVE MODE;`,
		`LOCK TABLE ONLY "app"."child" IN ACCESS EXCLUSIVE MODE;`,
		"held while it rewrites app.parent (5000 rows, ",
	} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("--dry-run: exit %d, stderr %q; stdout lacks %q:\n%s", code, errOut, want, out)
		}
	}
	if got := e.state(cols...); got != before {
		t.Errorf("--dry-run changed:\n%s\nwas\n%s", got, before)
	}
	code, out, _ = e.convert("--table", "parent", "--dry-run", "--json")
	var plan struct {
		DryRun   bool              `json:"dry_run"`
		SQL      string            `json:"sql"`
		Rewrites []convert.Rewrite `json:"rewrites"`
		Locks    []string          `json:"locks"`
		Key      convert.Column    `json:"key"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil || code != exitOK || !plan.DryRun || !strings.Contains(plan.SQL, "snowflake_next_id()") ||
		len(plan.Rewrites) != 2 || plan.Rewrites[0].Rows != 5000 || plan.Rewrites[1].Table != "app.child" || plan.Key.Type != "integer" ||
		strings.Join(plan.Locks, " ") != "app.child app.parent" {
		t.Errorf("--dry-run --json: exit %d, %+v (%v):\n%s", code, plan, err, out)
	}

	lo := e.nowMs()
	code, out, errOut = e.convert("--table", "parent", "--rewrite")
	if code != exitOK || !strings.HasPrefix(out, "converted app.parent.id (integer) to ids.snowflake_next_id(), layout twitter, node datacenter 3, machine 7\n") ||
		!strings.Contains(out, "bigint    app.parent.id, app.child.parent_id (rewrote ") {
		t.Fatalf("--rewrite: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	after := e.state(cols...)
	if !strings.Contains(after, `parent.id bigint default "ids.snowflake_next_id()"`) || !strings.Contains(after, "child.parent_id bigint default") {
		t.Errorf("after: %s", after)
	}
	var validated bool
	if err := e.super.QueryRow(`SELECT convalidated FROM pg_constraint WHERE conrelid = 'app.child'::regclass AND contype = 'f'`).Scan(&validated); err != nil || !validated {
		t.Errorf("the foreign key: validated %v, %v", validated, err)
	}
	var id int64
	if err := e.app.QueryRow(`INSERT INTO app.parent (name) VALUES ('new') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	e.checkID(id, lo, e.nowMs())
	var oldMax int64
	if err := e.app.QueryRow(`SELECT max(id) FROM app.parent WHERE id <> $1`, id).Scan(&oldMax); err != nil || oldMax != 5000 || id <= oldMax {
		t.Errorf("new id %d, old max %d (%v)", id, oldMax, err)
	}
	e.exec(e.app, `INSERT INTO app.child (parent_id) VALUES ($1)`, id)
	var pe *pgconn.PgError
	if _, err := e.app.Exec(`INSERT INTO app.child (parent_id) VALUES ($1)`, id+1); !errors.As(err, &pe) || pe.Code != "23503" {
		t.Errorf("a child of no parent: %v; want 23503, the foreign key holding", err)
	}
	// The record: the first ID made after the conversion, below the new
	// row's and above every old value.
	var first int64
	if err := e.super.QueryRow(`SELECT first_id FROM ids_sfgen.snowflake_conversion WHERE table_schema = 'app' AND table_name = 'parent' AND column_name = 'id'`).Scan(&first); err != nil || first >= id || first <= 5000 {
		t.Errorf("recorded first ID %d (%v); want in (5000, %d)", first, err, id)
	}

	code, out, errOut = sfgen(t, "audit", "--dsn", e.appDSN, "--table-schema", "app", "--table", "parent")
	if code != exitOK || !strings.Contains(out, "\nrows      5001 (0 NULL)\n") || !strings.Contains(out, "\nlegacy    5000 (below ") ||
		!strings.Contains(out, "\nnodes     1\n") || !strings.Contains(out, "OK: no future or invalid IDs") {
		t.Errorf("audit: exit %d, stderr %q:\n%s", code, errOut, out)
	}
	code, out, _ = sfgen(t, "audit", "--dsn", e.appDSN, "--table-schema", "app", "--table", "parent", "--json")
	var r struct {
		Legacy      int64  `json:"legacy"`
		LegacyBelow string `json:"legacy_below"`
		Nodes       []struct {
			Datacenter int64 `json:"datacenter_id"`
			Machine    int64 `json:"machine_id"`
			Rows       int64 `json:"rows"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitOK || r.Legacy != 5000 || r.LegacyBelow != fmt.Sprint(first) ||
		len(r.Nodes) != 1 || r.Nodes[0].Datacenter != 3 || r.Nodes[0].Machine != 7 || r.Nodes[0].Rows != 1 {
		t.Errorf("audit --json: exit %d, %+v (%v):\n%s", code, r, err, out)
	}
	// The child's column, recorded too: its old references are legacy.
	code, out, _ = sfgen(t, "audit", "--dsn", e.appDSN, "--table-schema", "app", "--table", "child", "--column", "parent_id")
	if code != exitOK || !strings.Contains(out, "\nlegacy    5000 (below ") {
		t.Errorf("audit of the child: exit %d:\n%s", code, out)
	}
	// A role that may read the table but not sfgen's private schema is
	// told so, not given a guess.
	reader, readerDSN := pgtest.LoginRole(t, e.dsn, "reader", "")
	e.exec(e.app, "GRANT USAGE ON SCHEMA app TO "+reader+"; GRANT SELECT ON app.parent TO "+reader)
	code, out, errOut = sfgen(t, "audit", "--dsn", readerDSN, "--table-schema", "app", "--table", "parent")
	if code != exitOK || !strings.Contains(out, "\nlegacy    not read: this role may not read ids_sfgen.snowflake_conversion (sfgen's owner, "+e.role+", may)\n") ||
		strings.Contains(out, "legacy    5000") {
		t.Errorf("audit as %s: exit %d, stderr %q:\n%s", reader, code, errOut, out)
	}
}

// TestConvertBigserialUnderInserts: a bigserial table converts while 4
// clients insert into it: no insert fails, no ID repeats, the IDs made
// after are the node's, and the sequence stays as it was (its value no
// longer moves).
func TestConvertBigserialUnderInserts(t *testing.T) {
	e := newConvEnv(t, 1, 2)
	e.exec(e.app, `CREATE TABLE app.events (id bigserial PRIMARY KEY, client int NOT NULL)`)
	e.exec(e.app, `INSERT INTO app.events (client) SELECT 0 FROM generate_series(1, 1000)`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const clients, after = 4, 50
	var converted sync.WaitGroup
	converted.Add(1)
	done := make(chan struct{})
	errs := make([]error, clients)
	counts := make([]int, clients)
	var wg sync.WaitGroup
	started := make(chan struct{}, clients)
	for i := range clients {
		wg.Go(func() {
			conn, err := pgx.Connect(ctx, e.appDSN)
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Close(ctx)
			past := -1 // inserts since the conversion ended
			for n := 0; n < 200000 && past < after; n++ {
				if _, err := conn.Exec(ctx, `INSERT INTO app.events (client) VALUES ($1)`, i+1); err != nil {
					errs[i] = fmt.Errorf("insert %d: %w", n, err)
					return
				}
				counts[i]++
				if n == 10 {
					started <- struct{}{}
				}
				select {
				case <-done:
					past++
				default:
				}
			}
		})
	}
	for range clients {
		<-started
	}
	var seqBefore int64
	code, out, errOut := e.convert("--table", "events")
	close(done)
	wg.Wait()
	if code != exitOK || !strings.Contains(out, "sequence  app.events_id_seq kept as it was, unused") {
		t.Fatalf("convert: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("client %d: %v", i+1, err)
		}
	}
	var rows, distinct, snowflakes int64
	if err := e.super.QueryRow(`SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE id > 1000000000000) FROM app.events`).Scan(&rows, &distinct, &snowflakes); err != nil {
		t.Fatal(err)
	}
	total := 1000
	for _, c := range counts {
		total += c
	}
	if rows != int64(total) || distinct != rows || snowflakes < clients*after {
		t.Errorf("%d rows (%d inserted), %d distinct, %d Snowflake IDs (want at least %d)", rows, total, distinct, snowflakes, clients*after)
	}
	var badNode int64
	if err := e.super.QueryRow(`SELECT count(*) FROM app.events WHERE id > 1000000000000 AND (id >> 17 & 31 <> 1 OR id >> 12 & 31 <> 2)`).Scan(&badNode); err != nil || badNode != 0 {
		t.Errorf("%d Snowflake IDs of another node (%v)", badNode, err)
	}
	// The sequence: kept, and no longer used.
	if err := e.super.QueryRow(`SELECT last_value FROM app.events_id_seq`).Scan(&seqBefore); err != nil {
		t.Fatalf("the sequence after the conversion: %v", err)
	}
	e.exec(e.app, `INSERT INTO app.events (client) VALUES (9)`)
	var seqAfter int64
	if err := e.super.QueryRow(`SELECT last_value FROM app.events_id_seq`).Scan(&seqAfter); err != nil || seqAfter != seqBefore {
		t.Errorf("sequence moved from %d to %d (%v)", seqBefore, seqAfter, err)
	}
}

// TestConvertIdentity: an identity column (GENERATED ALWAYS, which would
// refuse a default) loses its identity, and plain INSERTs get IDs of the
// node.
func TestConvertIdentity(t *testing.T) {
	e := newConvEnv(t, 4, 9)
	e.exec(e.app, `CREATE TABLE app.things (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text)`)
	e.exec(e.app, `INSERT INTO app.things (name) SELECT 't' FROM generate_series(1, 100)`)
	lo := e.nowMs()
	code, out, errOut := e.convert("--table", "things")
	if code != exitOK || !strings.Contains(out, "identity  dropped, with its sequence app.things_id_seq") {
		t.Fatalf("convert: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if s := e.state("things.id"); !strings.Contains(s, `things.id bigint default "ids.snowflake_next_id()" identity ""`) {
		t.Errorf("after: %s", s)
	}
	var id int64
	if err := e.app.QueryRow(`INSERT INTO app.things (name) VALUES ('x') RETURNING id`).Scan(&id); err != nil {
		t.Fatalf("a plain INSERT after: %v", err)
	}
	e.checkID(id, lo, e.nowMs())
	// The record table in ids_sfgen leaves the schema trusted: node and
	// install (release 4's preflight) still work on it.
	if code, out, errOut := sfgen(t, "node", "--dsn", e.appDSN, "--schema", "ids"); code != exitOK {
		t.Errorf("node after: exit %d, %q, %q", code, out, errOut)
	}
	if code, out, errOut := sfgen(t, "install", "--dsn", e.appDSN, "--schema", "ids"); code != exitOK {
		t.Errorf("install after: exit %d, %q, %q", code, out, errOut)
	}
}

// TestConvertSharedSequence: a sequence two tables' defaults use stays,
// and the other table goes on taking values from it.
func TestConvertSharedSequence(t *testing.T) {
	e := newConvEnv(t, 5, 5)
	e.exec(e.app, `CREATE SEQUENCE app.shared`)
	e.exec(e.app, `CREATE TABLE app.a (id bigint PRIMARY KEY DEFAULT nextval('app.shared'))`)
	e.exec(e.app, `CREATE TABLE app.b (id bigint PRIMARY KEY DEFAULT nextval('app.shared'))`)
	e.exec(e.app, `INSERT INTO app.a SELECT FROM generate_series(1, 10)`)
	e.exec(e.app, `INSERT INTO app.b SELECT FROM generate_series(1, 10)`)
	code, out, errOut := e.convert("--table", "a")
	if code != exitOK || !strings.Contains(out, "sequence  app.shared kept as it was: app.b.id go on using it") {
		t.Fatalf("convert: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// --json, on a second table of the sequence.
	e.exec(e.app, `CREATE TABLE app.c (id bigint PRIMARY KEY DEFAULT nextval('app.shared'))`)
	code, out, errOut = e.convert("--table", "c", "--json")
	var r struct {
		Converted  bool     `json:"converted"`
		FirstID    string   `json:"first_id"`
		Tries      int      `json:"tries"`
		Sequence   string   `json:"sequence"`
		SharedWith []string `json:"sequence_shared"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitOK || !r.Converted || r.Tries != 1 || r.Sequence != "app.shared" ||
		strings.Join(r.SharedWith, " ") != "app.b.id" || len(r.FirstID) < 18 {
		t.Errorf("--json: exit %d, %+v (%v), stderr %q:\n%s", code, r, err, errOut, out)
	}
	var next int64
	if err := e.app.QueryRow(`INSERT INTO app.b DEFAULT VALUES RETURNING id`).Scan(&next); err != nil || next != 21 {
		t.Errorf("b's next id %d (%v); want 21, from the shared sequence", next, err)
	}
}

// TestConvertBigintWithView: a view on a bigint key does not stop the
// default's change (its type stays), and an insert through it gets an ID.
func TestConvertBigintWithView(t *testing.T) {
	e := newConvEnv(t, 6, 1)
	e.exec(e.app, `CREATE TABLE app.users (id bigserial PRIMARY KEY, name text)`)
	e.exec(e.app, `CREATE VIEW app.users_v AS SELECT id, name FROM app.users`)
	lo := e.nowMs()
	if code, out, errOut := e.convert("--table", "users"); code != exitOK {
		t.Fatalf("convert: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	var id int64
	if err := e.app.QueryRow(`INSERT INTO app.users_v (name) VALUES ('v') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	e.checkID(id, lo, e.nowMs())
}

// TestConvertRefusals: each refusal exits 2 with one line saying why, and
// changes nothing.
func TestConvertRefusals(t *testing.T) {
	e := newConvEnv(t, 2, 3)
	e.exec(e.app, `CREATE TABLE app.t (id bigserial PRIMARY KEY, n bigint, s text UNIQUE, x numeric UNIQUE)`)
	e.exec(e.app, `INSERT INTO app.t (n, s, x) VALUES (1, 'a', 1)`)
	e.exec(e.app, `CREATE TABLE app.nopk (id bigint)`)
	e.exec(e.app, `CREATE TABLE app.ahead (id bigint PRIMARY KEY DEFAULT nextval('app.t_id_seq'))`)
	future, _ := snowflake.Twitter().Compose(e.nowMs()+3_600_000, 0, 0, 0)
	e.exec(e.app, `INSERT INTO app.ahead VALUES ($1)`, int64(future))
	e.exec(e.app, `CREATE TABLE app.parted (id int PRIMARY KEY) PARTITION BY RANGE (id)`)
	e.exec(e.app, `CREATE TABLE app.part1 PARTITION OF app.parted FOR VALUES FROM (0) TO (100)`)
	e.exec(e.app, `CREATE TABLE app.small (id serial PRIMARY KEY)`)
	e.exec(e.app, `CREATE VIEW app.small_v AS SELECT id FROM app.small`)
	e.exec(e.app, `CREATE TABLE app.done (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id())`)
	e.exec(e.super, `CREATE TABLE app.theirs (id bigserial PRIMARY KEY)`)
	e.exec(e.app, `CREATE TABLE app.gen (a bigint, id bigint GENERATED ALWAYS AS (a * 2) STORED UNIQUE)`)
	e.exec(e.app, `CREATE TABLE app.multi (a int, b int, PRIMARY KEY (a, b))`)
	e.exec(e.app, `CREATE TABLE app.base (id bigserial PRIMARY KEY)`)
	e.exec(e.app, `CREATE TABLE app.derived () INHERITS (app.base)`)
	e.exec(e.app, `CREATE TABLE app.p2 (id serial PRIMARY KEY)`)
	e.exec(e.super, `CREATE TABLE app.c2 (p integer REFERENCES app.p2 (id))`)
	script3, err := released.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: "old", Datacenter: 12, Machine: 12}, 3)
	if err != nil {
		t.Fatal(err)
	}
	e.exec(e.app, string(script3))
	// Row security forced on the owner hides the value ahead from it.
	e.exec(e.app, `CREATE TABLE app.hidden (id bigint PRIMARY KEY)`)
	e.exec(e.app, `INSERT INTO app.hidden VALUES (1), ($1)`, int64(future))
	e.exec(e.app, `ALTER TABLE app.hidden ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY`)
	e.exec(e.app, `CREATE POLICY small ON app.hidden USING (id < 1000)`)
	// Schemas: one without sfgen, one without a node, one other roles may
	// create in, one whose sfgen is another role's.
	e.exec(e.app, `CREATE SCHEMA empty`)
	if _, err := install.Apply(context.Background(), e.app, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "nonode", UnsetNode: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := install.Apply(context.Background(), e.app, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "open", Datacenter: 9, Machine: 9}); err != nil {
		t.Fatal(err)
	}
	e.exec(e.app, `GRANT CREATE ON SCHEMA open TO PUBLIC`)
	if _, err := install.Apply(context.Background(), e.super, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "admins", Datacenter: 8, Machine: 8}); err != nil {
		t.Fatal(err)
	}
	e.exec(e.super, `GRANT USAGE ON SCHEMA admins TO `+e.role)
	cols := []string{"t.id", "t.n", "nopk.id", "ahead.id", "small.id", "done.id", "theirs.id", "hidden.id", "gen.id", "base.id", "p2.id", "c2.p"}
	before := e.state(cols...)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"ahead of the clock", []string{"--table", "ahead"}, fmt.Sprintf("app.ahead.id holds %d, at or above ", future)},
		{"ahead of the clock, --dry-run", []string{"--table", "ahead", "--dry-run"}, fmt.Sprintf("app.ahead.id holds %d, at or above ", future)},
		{"not a key", []string{"--table", "t", "--column", "n"}, "column app.t.n is not a key"},
		{"not an integer", []string{"--table", "t", "--column", "s"}, "column app.t.s is of type text"},
		{"numeric", []string{"--table", "t", "--column", "x"}, "column app.t.x is of type numeric"},
		{"no primary key", []string{"--table", "nopk"}, "app.nopk has no primary key"},
		{"no table", []string{"--table", "nope"}, "table app.nope does not exist"},
		{"no column", []string{"--table", "t", "--column", "nope"}, "column app.t.nope does not exist"},
		{"partitioned", []string{"--table", "parted"}, "app.parted is a partitioned table"},
		{"partition", []string{"--table", "part1"}, "app.part1 is a partition"},
		{"a view on a rewrite", []string{"--table", "small", "--rewrite"}, "and view app.small_v use it"},
		{"already converted", []string{"--table", "done"}, "already defaults to ids.snowflake_next_id()"},
		{"another owner's table", []string{"--table", "theirs"}, "app.theirs is owned by role "},
		{"row security forced", []string{"--table", "hidden"}, "app.hidden forces row security on its owner"},
		{"generated", []string{"--table", "gen", "--column", "id"}, "column app.gen.id is a generated column"},
		{"a primary key of two columns", []string{"--table", "multi"}, "app.multi's primary key has 2 columns"},
		{"inheritance", []string{"--table", "base"}, "app.base has inheritance parents or children"},
		{"a child of another owner", []string{"--table", "p2", "--rewrite"}, "column app.c2.p would become bigint, and app.c2 is owned by role "},
		{"release 3", []string{"--table", "t", "--sfgen-schema", "old"}, "schema old is at sfgen release 3"},
		{"no sfgen", []string{"--table", "t", "--sfgen-schema", "empty"}, "sfgen is not installed in schema empty"},
		{"no node", []string{"--table", "t", "--sfgen-schema", "nonode"}, "schema nonode has no node"},
		{"untrusted", []string{"--table", "t", "--sfgen-schema", "open"}, "schema open is not trusted"},
		{"sfgen of another owner", []string{"--table", "t", "--sfgen-schema", "admins"}, "may not write there (only sfgen's owner, "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := e.convert(tc.args...)
			if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 saying %q", code, out, errOut, tc.want)
			}
			oneLine(t, errOut)
			if got := e.state(cols...); got != before {
				t.Errorf("it changed:\n%s\nwas\n%s", got, before)
			}
		})
	}
}

// TestConvertScriptChecksWhereItRuns: the --dry-run script, run later as
// a migration, checks the table again under its locks: a value past the
// first new ID inserted since makes it fail with SF301, changing nothing.
func TestConvertScriptChecksWhereItRuns(t *testing.T) {
	e := newConvEnv(t, 7, 7)
	e.exec(e.app, `CREATE TABLE app.orders (id bigserial PRIMARY KEY)`)
	code, script, errOut := e.convert("--table", "orders", "--dry-run")
	if code != exitOK {
		t.Fatalf("--dry-run: exit %d, %q", code, errOut)
	}
	before := e.state("orders.id")
	future, _ := snowflake.Twitter().Compose(e.nowMs()+3_600_000, 7, 7, 0)
	e.exec(e.app, `INSERT INTO app.orders VALUES ($1)`, int64(future))
	tx, err := e.app.Begin()
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(script)
	tx.Rollback()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "SF301" || !strings.Contains(pe.Message, fmt.Sprintf("holds %d", future)) {
		t.Errorf("the script over a value ahead: %v; want SF301", err)
	}
	if got := e.state("orders.id"); got != before {
		t.Errorf("it changed:\n%s\nwas\n%s", got, before)
	}
	// Row security forced on the owner, hiding that value: the script
	// fails rather than miss it.
	e.exec(e.app, `ALTER TABLE app.orders ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY`)
	e.exec(e.app, `CREATE POLICY small ON app.orders USING (id < 1000)`)
	tx, err = e.app.Begin()
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(script)
	tx.Rollback()
	if !errors.As(err, &pe) || pe.Code != "42501" || !strings.Contains(pe.Message, "row-level security") {
		t.Errorf("the script under forced row security: %v; want 42501", err)
	}
	if got := e.state("orders.id"); got != before {
		t.Errorf("it changed:\n%s\nwas\n%s", got, before)
	}
	e.exec(e.app, `ALTER TABLE app.orders NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY`)
	// Without that value, the same script converts, in a transaction of
	// the caller's (as goose runs it).
	e.exec(e.app, `DELETE FROM app.orders`)
	tx, err = e.app.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(script); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if s := e.state("orders.id"); !strings.Contains(s, `default "ids.snowflake_next_id()"`) {
		t.Errorf("after the script: %s", s)
	}
}

// TestConvertRetriesLocks: a session holding a lock on the table past
// the lock timeout makes convert try again (here it lets go after the
// first try, and the second converts); one that never lets go makes it
// fail, exit 1, changing nothing.
func TestConvertRetriesLocks(t *testing.T) {
	e := newConvEnv(t, 8, 1)
	e.exec(e.app, `CREATE TABLE app.orders (id bigserial PRIMARY KEY)`)
	blocker, err := e.super.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback()
	if _, err := blocker.Exec(`LOCK TABLE app.orders IN ACCESS SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	before := e.state("orders.id")
	code, out, errOut := e.convert("--table", "orders", "--lock-timeout", "20ms", "--retries", "2")
	if code != exitFail || out != "" || !strings.Contains(errOut, "past the lock timeout (20ms) on each of 3 tries") {
		t.Errorf("locked out: exit %d, stdout %q, stderr %q; want 1", code, out, errOut)
	}
	if got := e.state("orders.id"); got != before {
		t.Errorf("it changed:\n%s\nwas\n%s", got, before)
	}

	var retried []int
	o := convert.Options{Sfgen: "ids", TableSchema: "app", Table: "orders", LockTimeout: 20 * time.Millisecond, Retries: 3,
		OnRetry: func(try int, err error) {
			retried = append(retried, try)
			if try == 1 {
				blocker.Rollback()
			}
		}}
	ctx := context.Background()
	p, err := convert.Prepare(ctx, e.app, o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Apply(ctx, e.app)
	if err != nil || r.Tries != 2 || len(retried) != 1 {
		t.Fatalf("Apply = %+v, %v after retries %v; want 2 tries", r, err, retried)
	}
}

// TestConvertChecksThePlanUnderTheLocks: a foreign key added between the
// plan and its run would stay integer under a bigint key; the run reads
// the table again under its locks and refuses, changing nothing.
func TestConvertChecksThePlanUnderTheLocks(t *testing.T) {
	e := newConvEnv(t, 9, 2)
	e.exec(e.app, `CREATE TABLE app.parent (id serial PRIMARY KEY)`)
	e.exec(e.app, `CREATE TABLE app.child (id serial PRIMARY KEY, parent_id integer)`)
	ctx := context.Background()
	p, err := convert.Prepare(ctx, e.app, convert.Options{Sfgen: "ids", TableSchema: "app", Table: "parent", Rewrite: true})
	if err != nil {
		t.Fatal(err)
	}
	e.exec(e.app, `ALTER TABLE app.child ADD FOREIGN KEY (parent_id) REFERENCES app.parent (id)`)
	before := e.state("parent.id", "child.parent_id")
	if _, err := p.Apply(ctx, e.app); !errors.Is(err, convert.ErrRefused) || !strings.Contains(err.Error(), "changed while convert was planning") {
		t.Errorf("Apply after a foreign key was added: %v; want a refusal", err)
	}
	if got := e.state("parent.id", "child.parent_id"); got != before {
		t.Errorf("it changed:\n%s\nwas\n%s", got, before)
	}
}

// TestConvertDumpRestores: a database with a converted table dumps with
// pg_dump and restores with psql, every statement succeeding (pgEdge's
// conversion broke the dump's setval), with the old sequence's value,
// the default and the record kept, and the restored table makes IDs.
func TestConvertDumpRestores(t *testing.T) {
	if pgtest.External() {
		t.Skip("pg_dump must be the server's major: runs on the throwaway cluster only")
	}
	psql, err := psqlPath()
	if err != nil {
		t.Skipf("no psql beside the server binaries: %v", err)
	}
	pgDump := strings.TrimSuffix(psql, "psql") + "pg_dump"
	e := newConvEnv(t, 10, 3)
	e.exec(e.app, `CREATE TABLE app.orders (id bigserial PRIMARY KEY, item text)`)
	e.exec(e.app, `INSERT INTO app.orders (item) SELECT 'i' FROM generate_series(1, 100)`)
	if code, out, errOut := e.convert("--table", "orders"); code != exitOK {
		t.Fatalf("convert: exit %d, %q, %q", code, out, errOut)
	}
	e.exec(e.app, `INSERT INTO app.orders (item) VALUES ('after')`)
	file := t.TempDir() + "/dump.sql"
	if code, _, errOut := runProgram(t, pgDump, nil, []string{"--no-privileges", "-f", file, "-d", e.dsn}); code != 0 {
		t.Fatalf("pg_dump: exit %d, %s", code, errOut)
	}
	dump, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dump), "SELECT pg_catalog.setval('app.orders_id_seq', 100, true);") {
		t.Errorf("the dump lacks the sequence's setval")
	}
	target := pgtest.DSN(t)
	if code, out, errOut := runProgram(t, psql, nil, []string{"-X", "-q", "-v", "ON_ERROR_STOP=1", "-1", "-f", file, "-d", target}); code != 0 {
		t.Fatalf("restore: exit %d, %s%s", code, out, errOut)
	}
	db := testDB(t, target)
	var last, legacyBelow int64
	var def string
	if err := db.QueryRow(`SELECT (SELECT last_value FROM app.orders_id_seq),
		(SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'app.orders'::regclass),
		(SELECT first_id FROM ids_sfgen.snowflake_conversion)`).Scan(&last, &def, &legacyBelow); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := db.QueryRow(`INSERT INTO app.orders (item) VALUES ('restored') RETURNING id`).Scan(&id); err != nil {
		t.Fatalf("an insert after the restore: %v", err)
	}
	if last != 100 || def != "ids.snowflake_next_id()" || id <= legacyBelow || id>>17&31 != 10 || id>>12&31 != 3 {
		t.Errorf("restored: sequence at %d, default %q, record %d, new id %d", last, def, legacyBelow, id)
	}
}

// TestConvertLocksChildFirst: a transaction that has inserted into the
// child (a row without a parent) and inserts again (its foreign key's
// check then takes a lock on the parent) while convert waits for the
// child does not deadlock with it: convert locks the child before the parent, as inserts do, so the
// insert goes through and convert follows.
func TestConvertLocksChildFirst(t *testing.T) {
	e := newConvEnv(t, 11, 4)
	e.exec(e.app, `CREATE TABLE app.parent (id serial PRIMARY KEY)`)
	e.exec(e.app, `INSERT INTO app.parent SELECT FROM generate_series(1, 10)`)
	e.exec(e.app, `CREATE TABLE app.child (id serial PRIMARY KEY, parent_id integer REFERENCES app.parent (id))`)
	ctx := context.Background()
	inserter, err := e.app.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer inserter.Close()
	tx, err := inserter.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	// A row without a parent: the child locked, the parent not yet.
	if _, err := tx.Exec(`INSERT INTO app.child (parent_id) VALUES (NULL)`); err != nil {
		t.Fatal(err)
	}
	// Convert, in the background, waits for a lock the inserter holds.
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := e.convert("--table", "parent", "--rewrite", "--lock-timeout", "1m")
		done <- result{code, out, errOut}
	}()
	for {
		var waiting bool
		if err := e.super.QueryRow(`SELECT EXISTS (SELECT FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE NOT l.granted AND l.mode = 'AccessExclusiveLock' AND a.query LIKE 'LOCK TABLE%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("convert did not wait: exit %d, %q, %q", r.code, r.out, r.errOut)
		case <-time.After(10 * time.Millisecond):
		}
	}
	// The second insert checks the parent: with the parent locked first,
	// the two would wait on each other until the server broke the
	// deadlock, failing one.
	if _, err := tx.Exec(`INSERT INTO app.child (parent_id) VALUES (2)`); err != nil {
		t.Errorf("the insert while convert waits: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Errorf("its commit: %v", err)
	}
	if r := <-done; r.code != exitOK || !strings.Contains(r.out, "(1 try)") {
		t.Errorf("convert: exit %d, %q, %q; want it converted in one try", r.code, r.out, r.errOut)
	}
}

// TestConvertRefusesOthersCode: role app owns its tables, and a CHECK on
// the child of an integer key, and a trigger on a bigint key's table,
// call functions of role other (which may replace them at any time).
// convert --rewrite, --dry-run included, exits 2 naming the table, the
// object, the function, its owner and the ALTER FUNCTION that fixes it,
// and changes nothing; once the functions are app's, it converts.
func TestConvertRefusesOthersCode(t *testing.T) {
	e := newConvEnv(t, 4, 4)
	other, _ := pgtest.LoginRole(t, e.dsn, "other", "")
	e.exec(e.super, "CREATE SCHEMA o AUTHORIZATION "+other+"; GRANT USAGE ON SCHEMA o TO "+e.role)
	e.exec(e.super, "SET ROLE "+other+`;
CREATE FUNCTION o.positive(bigint) RETURNS boolean LANGUAGE sql RETURN $1 > 0;
CREATE FUNCTION o.touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
RESET ROLE`)
	e.exec(e.app, `CREATE TABLE app.parent (id serial PRIMARY KEY);
CREATE TABLE app.child (pid integer REFERENCES app.parent (id) CONSTRAINT pid_positive CHECK (o.positive(pid)));
CREATE TABLE app.orders (id bigserial PRIMARY KEY);
CREATE TRIGGER touch BEFORE UPDATE ON app.orders FOR EACH ROW EXECUTE FUNCTION o.touch()`)
	cols := []string{"parent.id", "child.pid", "orders.id"}
	before := e.state(cols...)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"a CHECK of the child", []string{"--table", "parent", "--rewrite"}, []string{
			"app.child's CHECK constraint pid_positive calls o.positive(bigint), a function of role " + other,
			"ALTER FUNCTION o.positive(bigint) OWNER TO " + e.role}},
		{"a CHECK of the child, --dry-run", []string{"--table", "parent", "--dry-run"}, []string{
			"app.child's CHECK constraint pid_positive calls o.positive(bigint), a function of role " + other}},
		{"a trigger of a bigint key's table", []string{"--table", "orders"}, []string{
			"app.orders's trigger touch calls o.touch(), a function of role " + other}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := e.convert(tc.args...)
			ok := code == exitUsage && out == ""
			for _, w := range tc.want {
				ok = ok && strings.Contains(errOut, w)
			}
			if !ok {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 saying %q", code, out, errOut, tc.want)
			}
			oneLine(t, errOut)
			if got := e.state(cols...); got != before {
				t.Errorf("it changed:\n%s\nwas\n%s", got, before)
			}
		})
	}
	e.exec(e.super, "ALTER FUNCTION o.positive(bigint) OWNER TO "+e.role+"; ALTER FUNCTION o.touch() OWNER TO "+e.role)
	for _, table := range []string{"parent", "orders"} {
		if code, _, errOut := e.convert("--table", table, "--rewrite"); code != exitOK {
			t.Errorf("convert %s once the functions are app's: exit %d, %s", table, code, errOut)
		}
	}
}

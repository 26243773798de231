package main

// sfgen audit against databases of pgtest's (a throwaway cluster, or the
// server $DATABASE_URL names).

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

// auditDB returns a fresh database with table public.orders (id bigint,
// created_at timestamptz) holding ids, each created at its own time.
func auditDB(t *testing.T, l snowflake.Layout, ids ...int64) (dsn string, db *sql.DB) {
	t.Helper()
	dsn = pgtest.DSN(t)
	db, err := connect.OpenDB(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("CREATE TABLE public.orders (id bigint, created_at timestamptz)"); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		at := time.Now()
		if p, err := l.Decompose(snowflake.ID(id)); err == nil {
			at = p.Time()
		}
		if _, err := db.Exec("INSERT INTO public.orders VALUES ($1, $2)", id, at); err != nil {
			t.Fatal(err)
		}
	}
	return dsn, db
}

func composeAt(t *testing.T, l snowflake.Layout, at time.Time, dc, m int64) int64 {
	t.Helper()
	id, err := l.Compose(at.UnixMilli(), dc, m, 0)
	if err != nil {
		t.Fatal(err)
	}
	return int64(id)
}

// TestAuditPlanted: IDs of node 1/2, IDs of another node (3/4), one dated
// tomorrow, one negative: reported exactly, in text and JSON, exit 1.
func TestAuditPlanted(t *testing.T) {
	for _, c := range []struct {
		layout string
		l      snowflake.Layout
	}{{"twitter", snowflake.Twitter()}, {"discord", snowflake.Discord()}} {
		t.Run(c.layout, func(t *testing.T) {
			l := c.l
			now := time.Now()
			ids := []int64{
				composeAt(t, l, now.Add(-2*time.Hour), 1, 2), composeAt(t, l, now.Add(-time.Hour), 1, 2),
				composeAt(t, l, now.Add(-90*time.Minute), 3, 4),
				composeAt(t, l, now.Add(24*time.Hour), 1, 2),
				-7,
			}
			dsn, _ := auditDB(t, l, ids...)
			args := []string{"audit", "--dsn", dsn, "--table", "orders"}
			if c.layout != "twitter" {
				args = append(args, "--layout", c.layout)
			}
			code, out, errOut := sfgen(t, args...)
			if code != exitFail || errOut != "" {
				t.Fatalf("exit %d, stderr %q; want 1 and nothing", code, errOut)
			}
			for _, want := range []string{
				"rows      5 (0 NULL)\n",
				"future    1 (dated after ",
				"plus 1m0s)\n",
				"invalid   1 (negative)\n",
				"nodes     2\n",
				fmt.Sprintf("              1          2            3  %s  %s  1\n", fmtTime(ms(now.Add(-2*time.Hour))), fmtTime(ms(now.Add(24*time.Hour)))),
				fmt.Sprintf("              3          4            1  %s  %s  0\n", fmtTime(ms(now.Add(-90*time.Minute))), fmtTime(ms(now.Add(-90*time.Minute)))),
				"FAIL: 1 future, 1 invalid\n",
				map[string]string{"twitter": "layout twitter (assumed: the column's default calls no sfgen generator; --layout names another)\n", "discord": "layout discord\n"}[c.layout],
			} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			code, out, _ = sfgen(t, append(args, "--json")...)
			var r struct {
				Rows, Invalid, Future int64
				Clean                 bool
				LayoutName            string `json:"layout_name"`
				LayoutFrom            string `json:"layout_from"`
				Nodes                 []struct {
					DC   int64 `json:"datacenter_id"`
					M    int64 `json:"machine_id"`
					Rows int64
				}
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitFail {
				t.Fatalf("--json: exit %d, %v:\n%s", code, err, out)
			}
			if r.Rows != 5 || r.Invalid != 1 || r.Future != 1 || r.Clean || r.LayoutName != c.layout || r.LayoutFrom != map[string]string{"twitter": "assumed", "discord": "flag"}[c.layout] || fmt.Sprint(r.Nodes) != "[{1 2 3} {3 4 1}]" {
				t.Errorf("--json: %+v", r)
			}
		})
	}
}

func ms(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }

// TestAuditClean: a clean table exits 0 and says OK; --future-tolerance
// decides whether an ID 10 minutes ahead is future.
func TestAuditClean(t *testing.T) {
	l := snowflake.Twitter()
	dsn, _ := auditDB(t, l, composeAt(t, l, time.Now().Add(-time.Minute), 0, 1), composeAt(t, l, time.Now().Add(-time.Second), 0, 1))
	code, out, errOut := sfgen(t, "audit", "--dsn", dsn, "--table", "orders", "--time-column", "created_at")
	if code != exitOK || errOut != "" || !strings.Contains(out, "OK: no future or invalid IDs\n") || !strings.Contains(out, "skew      ID time - created_at: |skew| p50 0ms p99 0ms max 0ms") {
		t.Errorf("clean table: exit %d, stderr %q:\n%s", code, errOut, out)
	}
	dsn, _ = auditDB(t, l, composeAt(t, l, time.Now().Add(10*time.Minute), 0, 1))
	for _, c := range []struct {
		tol  string
		code int
	}{{"1m", exitFail}, {"1h", exitOK}} {
		code, out, _ := sfgen(t, "audit", "--dsn", dsn, "--table", "orders", "--future-tolerance", c.tol)
		if code != c.code {
			t.Errorf("--future-tolerance %s: exit %d; want %d:\n%s", c.tol, code, c.code, out)
		}
	}
}

// TestAuditEmptyTable: an empty table is clean, and its report dates
// "future" from the database's now(), in text and in JSON, not from
// 1970-01-01.
func TestAuditEmptyTable(t *testing.T) {
	dsn, db := auditDB(t, snowflake.Twitter())
	dbNow := func() time.Time {
		var ms int64
		if err := db.QueryRow("SELECT floor(date_part('epoch', now()) * 1000)::int8").Scan(&ms); err != nil {
			t.Fatal(err)
		}
		return time.UnixMilli(ms).UTC()
	}
	// With a time column the query has a row for the whole table even
	// when it is empty; without one it has none.
	for _, extra := range [][]string{nil, {"--time-column", "created_at"}} {
		before := dbNow()
		code, out, errOut := sfgen(t, append([]string{"audit", "--dsn", dsn, "--table", "orders"}, extra...)...)
		after := dbNow()
		m := regexp.MustCompile(`(?m)^future    0 \(dated after (\S+): the database's now\(\) (\S+) plus 1m0s\)$`).FindStringSubmatch(out)
		if code != exitOK || errOut != "" || m == nil || !strings.Contains(out, "rows      0 (0 NULL)\n") || !strings.Contains(out, "OK: no future or invalid IDs\n") {
			t.Fatalf("empty table %q: exit %d, stderr %q:\n%s", extra, code, errOut, out)
		}
		now, err := time.Parse(time.RFC3339, m[2])
		if err != nil || now.Before(before) || now.After(after) || m[1] != fmtTime(now.Add(time.Minute)) {
			t.Errorf("empty table %q: now %s, future after %s; want the database's now(), from %s to %s, and a minute later", extra, m[2], m[1], fmtTime(before), fmtTime(after))
		}
	}

	before := dbNow()
	code, out, errOut := sfgen(t, "audit", "--dsn", dsn, "--table", "orders", "--json")
	after := dbNow()
	var r struct {
		Rows        int64
		Now         time.Time `json:"now"`
		FutureAfter time.Time `json:"future_after"`
		Clean       bool
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitOK || errOut != "" {
		t.Fatalf("--json: exit %d, stderr %q, %v:\n%s", code, errOut, err, out)
	}
	if r.Rows != 0 || !r.Clean || r.Now.Before(before) || r.Now.After(after) || !r.FutureAfter.Equal(r.Now.Add(time.Minute)) {
		t.Errorf("--json of an empty table: %+v; want now from %s to %s", r, fmtTime(before), fmtTime(after))
	}
}

// TestAuditUsage: bad usage, a missing table or column, a column of
// another type and injection attempts are one line on stderr and exit 2,
// and the table attacked is still there.
func TestAuditUsage(t *testing.T) {
	dsn, db := auditDB(t, snowflake.Twitter())
	if _, err := db.Exec("ALTER TABLE public.orders ADD COLUMN note text"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--table is required"},
		{[]string{"--table", "nope"}, "table public.nope does not exist"},
		{[]string{"--table", "Orders"}, "table public.Orders does not exist"},
		{[]string{"--table", "orders", "--column", "uid"}, "column public.orders.uid does not exist"},
		{[]string{"--table", "orders", "--column", "note"}, "column note is of type text"},
		{[]string{"--table", "orders", "--time-column", "note"}, "column note is of type text; want one of timestamp"},
		{[]string{"--table", "orders", "--skew-threshold", "2s"}, "--skew-threshold needs --time-column"},
		{[]string{"--table", "orders", "--future-tolerance", "-1s"}, "future tolerance -1s out of range"},
		{[]string{"--table", "orders", "--layout", "nope"}, "--layout:"},
		{[]string{"--table", "orders", "extra"}, `unexpected argument "extra"`},
		{[]string{"--table", `orders"; DROP TABLE public.orders; --`}, `table public.orders"; DROP TABLE public.orders; -- does not exist`},
		{[]string{"--table", "orders; DROP TABLE public.orders"}, "does not exist"},
		{[]string{"--table", "orders", "--column", `id") FROM public.orders; DROP TABLE public.orders; --`}, "does not exist"},
		{[]string{"--table-schema", `public"; DROP TABLE public.orders; --`, "--table", "orders"}, "does not exist"},
		{[]string{"--table", "orders", "--time-column", `created_at"; DROP TABLE public.orders; --`}, "does not exist"},
		{[]string{"--table", strings.Repeat("x", 64)}, "64 bytes; want at most 63"},
		{[]string{"--table", strings.Repeat("x", 100<<10)}, `invalid table name "` + strings.Repeat("x", 64) + `"…: 102400 bytes; want at most 63`},
		{[]string{"--table-schema", strings.Repeat("s", 100<<10), "--table", "orders"}, `invalid schema name "` + strings.Repeat("s", 64) + `"…: 102400 bytes`},
	} {
		code, out, errOut := sfgen(t, append([]string{"audit", "--dsn", dsn}, c.args...)...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, "sfgen audit: ") || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%.300q: exit %d, stdout %q, stderr %.300q; want 2 and one line with %.300q", c.args, code, out, errOut, c.want)
		}
		if len(errOut) > 300 {
			t.Errorf("%.300q: %d bytes on stderr; want a short line (a long name is cut)", c.args, len(errOut))
		}
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM public.orders").Scan(&n); err != nil {
		t.Errorf("the table attacked: %v", err)
	}
	t.Setenv("DATABASE_URL", "")
	if code, _, errOut := sfgen(t, "audit", "--table", "orders"); code != exitUsage || !strings.Contains(errOut, "no database") {
		t.Errorf("no database: exit %d, %q", code, errOut)
	}
}

// TestShowProgress: each tick writes the label and the time so far on one
// line; stop clears it.
func TestShowProgress(t *testing.T) {
	var b strings.Builder
	tick := make(chan time.Time)
	n := 0
	stop := showProgress(&b, "sfgen audit: reading public.big (about 3000000 rows)", tick, func() time.Duration { n++; return time.Duration(n) * time.Second }, nil)
	tick <- time.Time{}
	tick <- time.Time{} // received only once the first write is done
	stop()
	want := "\r\x1b[Ksfgen audit: reading public.big (about 3000000 rows): 1s\r\x1b[Ksfgen audit: reading public.big (about 3000000 rows): 2s\r\x1b[K"
	if b.String() != want {
		t.Errorf("progress wrote %q; want %q", b.String(), want)
	}
}

// TestShowProgressParts: where the audit reads in chunks, the line also
// gives the parts read of how many, and the time left at the pace so far
// (issue 43, item 9); before the first part, the time alone.
func TestShowProgressParts(t *testing.T) {
	var b strings.Builder
	tick := make(chan time.Time)
	n, calls := 0, 0
	parts := func() (int, int) { // none done at the first two ticks, then 4
		if calls++; calls > 2 {
			return 4, 16
		}
		return 0, 16
	}
	stop := showProgress(&b, "sfgen audit: reading public.big (about 3000000 rows)", tick, func() time.Duration { n++; return time.Duration(n) * time.Second }, parts)
	for range 3 {
		tick <- time.Time{} // each received once the write before it is done
	}
	stop()
	const label = "\r\x1b[Ksfgen audit: reading public.big (about 3000000 rows): "
	want := label + "1s" + label + "2s" + label + "4 of 16 parts, 3s, about 9s left\r\x1b[K"
	if b.String() != want {
		t.Errorf("progress wrote %q; want %q", b.String(), want)
	}
}

// TestAuditLeaseMarksAhead: audit names an expired lease of the table's
// layout whose high-water mark is ahead of the database's clock, in text
// and JSON, and keeps exit 0 for a clean table; a mark within the bound,
// another layout's schema and a role that may not read the lease table
// (told so) are not reported as ahead.
func TestAuditLeaseMarksAhead(t *testing.T) {
	l := snowflake.Twitter()
	dsn, db := auditDB(t, l, composeAt(t, l, time.Now().Add(-time.Minute), 0, 1))
	if code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "ids", "--datacenter", "0", "--machine", "1"); code != 0 {
		t.Fatalf("install = %d %s %s", code, out, errOut)
	}
	if code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "disc", "--layout", "discord", "--datacenter", "0", "--machine", "1"); code != 0 {
		t.Fatalf("install discord = %d %s %s", code, out, errOut)
	}
	// A holder that left node 3/4 (Twitter) and node 3/4 (Discord) with
	// their marks 0.5 s and 30 s ahead: Close lowers the mark to its last ID.
	for _, schema := range []string{"ids", "disc"} {
		var dc, m, token int64
		if err := db.QueryRow(`SELECT datacenter_id, machine_id, token FROM "`+schema+`".snowflake_lease_take('fast holder', 60000)`).Scan(&dc, &m, &token); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`UPDATE "`+schema+`_sfgen".snowflake_lease SET datacenter_id = 3, machine_id = 4 WHERE token = $1`, token); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`SELECT "`+schema+`".snowflake_lease_release(3, 4, $1, pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint + 500)`, token); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := sfgen(t, "audit", "--dsn", dsn, "--table", "orders")
	if code != exitOK || errOut != "" || strings.Contains(out, "leases ") {
		t.Fatalf("marks 0.5 s ahead, within the bound: exit %d, stderr %q:\n%s", code, errOut, out)
	}
	// Both marks 30 s ahead of the database's clock, read in the statement
	// that sets them: the audits below read that clock later, so the
	// Twitter mark they report is at most 30 s ahead, and at least 30 s
	// less the time the database's clock moved until they were done
	// (read after them). No wall clock: an overloaded machine only widens
	// the range.
	setMs := map[string]int64{}
	for _, schema := range []string{"ids", "disc"} {
		var at int64
		if err := db.QueryRow(`WITH c AS (SELECT pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint AS ms)
			UPDATE "` + schema + `_sfgen".snowflake_lease SET high_water_ms = (SELECT ms FROM c) + 30000
			WHERE datacenter_id = 3 AND machine_id = 4 RETURNING (SELECT ms FROM c)`).Scan(&at); err != nil {
			t.Fatal(err)
		}
		setMs[schema] = at
	}
	code, out, errOut = sfgen(t, "audit", "--dsn", dsn, "--table", "orders")
	code2, out2, _ := sfgen(t, "audit", "--dsn", dsn, "--table", "orders", "--json")
	var doneMs int64
	if err := db.QueryRow(`SELECT pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint`).Scan(&doneMs); err != nil {
		t.Fatal(err)
	}
	minAhead, maxAhead := 30000-(doneMs-setMs["ids"]), int64(30000)
	// On a machine slow enough to take 29 s the mark may be within the
	// bound by the time an audit reads it: nothing to tell, then.
	slow := minAhead <= catalog.FutureBoundMs
	if slow {
		t.Logf("the database's clock moved %d ms from the mark to the audits' end: too long to tell a mark ahead", doneMs-setMs["ids"])
	}
	want := regexp.MustCompile(`\nleases    node datacenter 3, machine 4 \(schema ids\): its high-water mark is (\d+\.\d) s ahead of the database's clock \(its last holder, fast holder, ran ahead\)`)
	m := want.FindStringSubmatch(out)
	var seconds float64
	if m != nil {
		seconds, _ = strconv.ParseFloat(m[1], 64)
	}
	if !slow && (code != exitOK || errOut != "" || m == nil || strings.Count(out, "leases ") != 1 ||
		seconds < float64(minAhead)/1000-0.05 || seconds > float64(maxAhead)/1000+0.05) {
		t.Errorf("a Twitter mark 30 s ahead (and a Discord one), read %d to %d ms ahead: exit %d, stderr %q:\n%s", minAhead, maxAhead, code, errOut, out)
	}
	var r struct {
		LeasesAhead []struct {
			Schema     string `json:"schema"`
			Datacenter int64  `json:"datacenter"`
			Machine    int64  `json:"machine"`
			AheadMs    int64  `json:"ahead_ms"`
		} `json:"leases_ahead"`
		Clean bool `json:"clean"`
	}
	if err := json.Unmarshal([]byte(out2), &r); !slow && (err != nil || code2 != exitOK || !r.Clean || len(r.LeasesAhead) != 1 ||
		r.LeasesAhead[0].Schema != "ids" || r.LeasesAhead[0].Datacenter != 3 || r.LeasesAhead[0].Machine != 4 ||
		r.LeasesAhead[0].AheadMs < minAhead || r.LeasesAhead[0].AheadMs > maxAhead) {
		t.Errorf("--json, read %d to %d ms ahead: exit %d, %+v (%v):\n%s", minAhead, maxAhead, code2, r, err, out2)
	}
	// A role that may read the table and use schema ids, but not read its
	// lease table, nor use schema disc (whose layout it cannot know).
	name, roleDSN := pgtest.LoginRole(t, dsn, "auditor", "")
	if _, err := db.Exec(`GRANT SELECT ON public.orders TO ` + name + `; GRANT USAGE ON SCHEMA ids TO ` + name); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = sfgen(t, "audit", "--dsn", roleDSN, "--table", "orders")
	if code != exitOK || errOut != "" || !strings.Contains(out, "\nleases    not read: schema ids: this role may not read ids_sfgen.snowflake_lease (its owner may)\n") ||
		!strings.Contains(out, "\nleases    not read: schema disc: read sfgen's functions in schema disc: ERROR: permission denied for schema disc") || strings.Contains(out, "ahead") {
		t.Errorf("as %s: exit %d, stderr %q:\n%s", name, code, errOut, out)
	}
}

// TestAuditLayoutFromDefault: a column whose default is a Discord schema's
// generator is decoded with Discord's layout without --layout (with
// Twitter's, its IDs dated some four years off and the report said OK);
// a --layout that disagrees is refused, exit 2; one that agrees is fine.
func TestAuditLayoutFromDefault(t *testing.T) {
	dsn := pgtest.DSN(t)
	if code, _, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "disc", "--layout", "discord", "--datacenter", "1", "--machine", "2"); code != 0 {
		t.Fatalf("install: %s", errOut)
	}
	db := testDB(t, dsn)
	mustExecDB(t, db, "CREATE TABLE public.orders (id bigint PRIMARY KEY DEFAULT disc.snowflake_next_id(), n int)")
	mustExecDB(t, db, "INSERT INTO public.orders (n) SELECT g FROM generate_series(1, 100) g")
	code, out, errOut := sfgen(t, "audit", "--dsn", dsn, "--table", "orders", "--json")
	var r struct {
		Layout string `json:"layout_name"`
		From   string `json:"layout_from"`
		Nodes  []struct {
			Datacenter int64 `json:"datacenter_id"`
			Machine    int64 `json:"machine_id"`
			Rows       int64 `json:"rows"`
		} `json:"nodes"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &r) != nil || r.Layout != "discord" || r.From != "default" || len(r.Nodes) != 1 || r.Nodes[0].Datacenter != 1 || r.Nodes[0].Machine != 2 {
		t.Errorf("audit without --layout = %d, %q, %s; want Discord's layout and node 1/2", code, errOut, out)
	}
	if code, _, errOut := sfgen(t, "audit", "--dsn", dsn, "--table", "orders", "--layout", "twitter"); code != exitUsage || !strings.Contains(errOut, "defaults to schema disc's generator, of layout discord") {
		t.Errorf("audit --layout twitter = %d, %q; want exit 2 naming the default's layout", code, errOut)
	}
	if code, _, errOut := sfgen(t, "audit", "--dsn", dsn, "--table", "orders", "--layout", "discord"); code != exitOK {
		t.Errorf("audit --layout discord = %d, %q", code, errOut)
	}
	// The report says where its layout came from.
	const first = "table     public.orders, column id, layout discord (the column's default: schema disc's generator)\n"
	if code, out, _ := sfgen(t, "audit", "--dsn", dsn, "--table", "orders"); code != exitOK || !strings.HasPrefix(out, first) {
		t.Errorf("audit = %d:\n%s\nwant it to start %q", code, out, first)
	}
}

// TestAuditCallsNoFunctionOfTheDefaultsSchema: the layout of the
// generator a column defaults to is read from the catalogs, never by
// calling it: a superuser's audit of a table whose default is another
// role's look-alike (whose snowflake_layout() makes that role a
// superuser when a superuser calls it, as the control shows) leaves the
// role as it was.
func TestAuditCallsNoFunctionOfTheDefaultsSchema(t *testing.T) {
	dsn := pgtest.DSN(t)
	db := testDB(t, dsn)
	mallory := pgtest.Role(t, dsn, "mallory", "LOGIN")
	mustExecDB(t, db, "CREATE SCHEMA m AUTHORIZATION "+mallory)
	mustExecDB(t, db, `CREATE FUNCTION m.snowflake_layout() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE `+mallory+` SUPERUSER';
    END IF;
    RETURN 'discord';
END $$`)
	mustExecDB(t, db, "COMMENT ON FUNCTION m.snowflake_layout() IS 'The Snowflake layout these functions were generated for: "+discordSpec+". Generated by sfgen release 8.'")
	mustExecDB(t, db, "CREATE FUNCTION m.snowflake_next_id() RETURNS bigint LANGUAGE sql AS 'SELECT 175928847299117063::bigint'")
	mustExecDB(t, db, "ALTER FUNCTION m.snowflake_layout() OWNER TO "+mallory+"; ALTER FUNCTION m.snowflake_next_id() OWNER TO "+mallory)
	mustExecDB(t, db, "CREATE TABLE public.orders (id bigint DEFAULT m.snowflake_next_id()); INSERT INTO public.orders DEFAULT VALUES")
	superuser := func() (yes bool) {
		db.QueryRow("SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1", mallory).Scan(&yes)
		return yes
	}
	// The control: a superuser's call escalates.
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var escalated bool
	tx.QueryRow("SELECT m.snowflake_layout()").Scan(new(string))
	tx.QueryRow("SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1", mallory).Scan(&escalated)
	tx.Rollback()
	if !escalated {
		t.Fatal("the plant did not work: this test cannot tell")
	}
	code, out, errOut := sfgen(t, "audit", "--dsn", dsn, "--table", "orders", "--json")
	if code != exitOK || !strings.Contains(out, `"layout_name": "discord"`) {
		t.Errorf("audit = %d, %q, %s; want Discord's layout, read from the comment", code, errOut, out)
	}
	if superuser() {
		t.Fatal("audit made mallory a superuser")
	}
}

// withoutNow is an audit report without its "future" line, which gives
// the database's now().
func withoutNow(report string) string {
	return regexp.MustCompile(`(?m)^future .*$`).ReplaceAllString(report, "future")
}

// TestAuditTableSchema: --table-schema names the table's schema, as
// --schema did in audit while it names sfgen's schema in every other
// command (issue 43, item 5). --schema is refused, exit 2, naming
// --table-schema: the mistake, --schema meant as sfgen's, got
// "table ids.orders does not exist".
func TestAuditTableSchema(t *testing.T) {
	dsn := pgtest.DSN(t)
	db := testDB(t, dsn)
	execAll(t, db, "CREATE SCHEMA app", "CREATE TABLE app.orders (id bigint)", "INSERT INTO app.orders VALUES (4194439168)",
		"CREATE TABLE public.orders (id bigint)")
	const refused = "sfgen audit: invalid value \"%s\" for flag --schema: the table's schema is --table-schema here; --schema names sfgen's schema in every other command, and audit finds sfgen's from the column's default; see 'sfgen audit --help'\n"
	_, clean, _ := sfgen(t, "audit", "--dsn", dsn, "--table", "orders", "--table-schema", "app")
	if !strings.HasPrefix(clean, "table     app.orders, column id, layout twitter (assumed: the column's default calls no sfgen generator; --layout names another)\nrows      1 (0 NULL)\n") {
		t.Fatalf("audit --table-schema app:\n%s", clean)
	}
	for _, tc := range []struct {
		args         []string
		code         int
		stdout, errs string
	}{
		{[]string{"--table-schema", "app"}, exitOK, clean, ""},
		{[]string{"--schema", "app"}, exitUsage, "", fmt.Sprintf(refused, "app")},
		{[]string{"--schema", "ids"}, exitUsage, "", fmt.Sprintf(refused, "ids")}, // issue 43's: "table ids.orders does not exist"
		{[]string{"--schema", "app", "--table-schema", "app"}, exitUsage, "", fmt.Sprintf(refused, "app")},
	} {
		code, out, errOut := sfgen(t, append([]string{"audit", "--dsn", dsn, "--table", "orders"}, tc.args...)...)
		if code != tc.code || withoutNow(out) != withoutNow(tc.stdout) || errOut != tc.errs {
			t.Errorf("audit %q = exit %d, stderr %q, stdout\n%s\nwant exit %d, stderr %q, stdout\n%s", tc.args, code, errOut, out, tc.code, tc.errs, tc.stdout)
		}
	}
}

package main

import (
	"database/sql"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// TestNextLeases: two `sfgen next --dsn` at once lease different nodes,
// neither the database's own, and make IDs that carry their node and
// never collide; both give their lease back when they end.
func TestNextLeases(t *testing.T) {
	dsn := pgtest.DSN(t)
	if code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--datacenter", "2", "--machine", "2"); code != 0 {
		t.Fatalf("install = %d %s %s", code, out, errOut)
	}
	type run struct {
		code        int
		out, errOut string
	}
	runs := make([]run, 2)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			code, out, errOut := sfgen(t, "next", "--dsn", dsn, "--count", "200000")
			runs[i] = run{code, out, errOut}
		})
	}
	wg.Wait()
	// Runs whose IDs overlap in time must have different nodes, neither
	// the database's; a run that started after another ended may be given
	// its node again (its lease was given back), and then starts above it.
	type span struct {
		node        [2]int64
		first, last int64
	}
	seen := map[int64]int{}
	var spans []span
	for i, r := range runs {
		if r.code != 0 {
			t.Fatalf("run %d: exit %d, stderr %s", i, r.code, r.errOut)
		}
		var dc, m int64
		if _, err := fmt.Sscanf(r.errOut, "sfgen next: leased node datacenter %d, machine %d", &dc, &m); err != nil {
			t.Fatalf("run %d: stderr %q does not name the node", i, r.errOut)
		}
		if dc == 2 && m == 2 {
			t.Errorf("run %d leased node 2/2, the database's own", i)
		}
		lines := strings.Fields(r.out)
		if len(lines) != 200000 {
			t.Fatalf("run %d: %d IDs, want 200000", i, len(lines))
		}
		var last int64
		for _, s := range lines {
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			p, err := snowflake.Decompose(snowflake.ID(id))
			if err != nil || p.Datacenter != dc || p.Machine != m || id <= last {
				t.Fatalf("run %d: ID %d (%+v, %v) after %d; want increasing IDs of node %d/%d", i, id, p, err, last, dc, m)
			}
			if j, dup := seen[id]; dup {
				t.Fatalf("ID %d from runs %d and %d", id, j, i)
			}
			seen[id] = i
			last = id
		}
		first, _ := strconv.ParseInt(lines[0], 10, 64)
		spans = append(spans, span{[2]int64{dc, m}, first >> 22, last >> 22})
	}
	a, b := spans[0], spans[1]
	overlap := a.first <= b.last && b.first <= a.last
	t.Logf("runs: node %v ms %d-%d and node %v ms %d-%d; overlapping: %v", a.node, a.first, a.last, b.node, b.first, b.last, overlap)
	if a.node == b.node {
		if overlap {
			t.Errorf("two runs at the same time had node %v", a.node)
		}
		if a.first > b.first {
			a, b = b, a
		}
		if b.first <= a.last {
			t.Errorf("node %v given again starts at ms %d, not above the last holder's %d", a.node, b.first, a.last)
		}
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var live int
	// Release 4 keeps the lease table in the schema's private schema.
	leases := fmt.Sprintf(`"%s".snowflake_lease`, catalog.PrivateSchema("public"))
	if err := db.QueryRow(`SELECT count(*) FROM ` + leases + ` WHERE expires_at > pg_catalog.clock_timestamp()`).Scan(&live); err != nil || live != 0 {
		t.Errorf("%d leases live after both runs ended (%v); want 0: next gives its lease back", live, err)
	}
}

// TestNextLeaseUsage: what --dsn does not go with, and a schema from
// before leases.
func TestNextLeaseUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dsn", "postgres://x@localhost/x", "--machine", "1"}, "--machine does not go with --dsn"},
		{[]string{"--dsn", "postgres://x@localhost/x", "--datacenter", "1"}, "--datacenter does not go with --dsn"},
		{[]string{"--dsn", "postgres://x@localhost/x", "--layout", "discord"}, "--layout does not go with --dsn"},
		{[]string{"--dsn", "postgres://x@localhost/x", "--lease-ttl", "500ms"}, "--lease-ttl 500ms is out of range: want 1s to 24h"},
		{[]string{"--schema", "ids"}, "--schema goes with --dsn"},
		{[]string{"--lease-ttl", "1m"}, "--lease-ttl goes with --dsn"},
	} {
		code, out, errOut := sfgen(t, append([]string{"next"}, tc.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("next %v = %d, %q, %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	// An empty database, then a schema at release 2: no leases, one line saying so.
	if code, out, errOut := sfgen(t, "next", "--dsn", pgtest.DSN(t)); code != 1 || out != "" || !strings.Contains(errOut, "schema public has no sfgen install") {
		t.Errorf("next --dsn on an empty database = %d, %q, %q", code, out, errOut)
	}
	dsn := pgtest.DSN(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files, err := released.Migrations(sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files[:2] {
		if _, err := db.Exec(f.Up()); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
	}
	if in, err := catalog.Inspect(t.Context(), catalog.DB(db), catalog.Public); err != nil || in.Release != 2 {
		t.Fatalf("set up release 2: %+v %v", in, err)
	}
	code, out, errOut := sfgen(t, "next", "--dsn", dsn)
	if code != 1 || out != "" || !strings.Contains(errOut, "schema public is at sfgen release 2, before leases (release 3); upgrade it with sfgen install") ||
		strings.Count(errOut, "\n") != 1 {
		t.Errorf("next --dsn on release 2 = %d, %q, %q", code, out, errOut)
	}
}

// TestNextWarnsOfAFloorAhead: when the only free node's floor is ahead of
// the database's clock (its earlier holder's clock ran ahead), next says
// so on stderr and dates its IDs from there; a node taken afresh gives
// no warning.
func TestNextWarnsOfAFloorAhead(t *testing.T) {
	dsn := pgtest.DSN(t)
	// Four nodes: 0/0 the schema's, 0/1 and 1/1 reserved, 1/0 left by a
	// holder ten minutes ahead.
	const tiny = "epoch=1288834974657 timestamp=45 datacenter=1 machine=1 sequence=16"
	if code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--layout", tiny, "--datacenter", "0", "--machine", "0"); code != 0 {
		t.Fatalf("install = %d %s %s", code, out, errOut)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`SELECT public.snowflake_lease_reserve(0, 1, 'elsewhere'), public.snowflake_lease_reserve(1, 1, 'elsewhere')`); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := sfgen(t, "next", "--dsn", dsn, "--count", "1")
	if code != 0 || strings.Contains(errOut, "warning") {
		t.Fatalf("next on node 1/0, never leased = %d, stderr %q; want 0 and no warning", code, errOut)
	}
	leases := fmt.Sprintf(`"%s".snowflake_lease`, catalog.PrivateSchema("public"))
	var ahead int64
	if err := db.QueryRow(`UPDATE ` + leases + ` SET high_water_ms = pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint + 600000
		WHERE (datacenter_id, machine_id) = (1, 0) RETURNING high_water_ms`).Scan(&ahead); err != nil {
		t.Fatalf("move node 1/0's mark ahead (next leased it, given back): %v", err)
	}
	code, out, errOut := sfgen(t, "next", "--dsn", dsn, "--count", "1")
	if code != 0 || !regexp.MustCompile(`\nsfgen next: warning: node datacenter 1, machine 0 starts (599\.\d|600\.0) s ahead of the database's clock`).MatchString(errOut) {
		t.Fatalf("next on node 1/0, 10 min ahead = %d, stderr %q; want 0 and the warning", code, errOut)
	}
	l, err := snowflake.ParseLayout(tiny)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if p, err := l.Decompose(snowflake.ID(id)); err != nil || p.Timestamp != ahead+1 {
		t.Errorf("ID %s: %+v, %v; want dated %d, above the mark", out, p, err, ahead+1)
	}
}

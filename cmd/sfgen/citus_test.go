package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/citustest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// TestNodeCitusFleet runs 'sfgen node --dsn COORDINATOR' on a Citus
// coordinator with two workers: it checks every node of pg_dist_node.
//   - A schema installed on the coordinator alone (DDL propagation off)
//     leaves the workers without a node: both are missing, exit 1.
//   - Installed on each worker too, with nodes of their own: ok, exit 0.
//   - 'sfgen node --datacenter --machine' on a worker sets that
//     worker's node alone: two set alike share it, exit 1.
//   - A schema installed through the coordinator by sfgen's plain script
//     (psql, DDL propagation on), whose functions Citus copies to every
//     worker but for the node's (release 7: with the coordinator's node,
//     three pairs shared it): two nodes missing, three with objects Citus
//     made its own, exit 1.
func TestNodeCitusFleet(t *testing.T) {
	cl := citustest.Start(t, 2)
	install := func(dsn, schema, machine string) {
		t.Helper()
		if code, _, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", schema, "--datacenter", "1", "--machine", machine); code != exitOK {
			t.Fatalf("install %s on %s: exit %d: %s", schema, dsn, code, errOut)
		}
	}
	coordinator := cl.Coordinator.DSN()

	install(coordinator, "loc", "1") // install keeps it on the coordinator
	code, out, _ := sfgen(t, "node", "--dsn", coordinator, "--schema", "loc")
	if code != exitFail || strings.Count(out, "(citus worker) schema loc: no sfgen") != 2 ||
		!strings.Contains(out, "(citus coordinator) schema loc: datacenter 1, machine 1") ||
		!strings.Contains(out, "FAIL: 2 nodes of this Citus cluster cannot make IDs") {
		t.Fatalf("coordinator alone: exit %d:\n%s", code, out)
	}

	for i, w := range cl.Workers {
		install(w.DSN(), "loc", string(rune('2'+i)))
	}
	code, out, _ = sfgen(t, "node", "--dsn", coordinator, "--schema", "loc")
	if code != exitOK || !strings.Contains(out, "ok: 3 schemas with sfgen, each with its own node") {
		t.Fatalf("each node its own: exit %d:\n%s", code, out)
	}
	code, out, _ = sfgen(t, "node", "--dsn", coordinator, "--schema", "loc", "--json")
	var r struct {
		OK      bool `json:"ok"`
		Citus   bool `json:"citus"`
		Targets []struct {
			Database string `json:"database"`
			Machine  int    `json:"machine"`
		} `json:"targets"`
		Missing []int `json:"missing"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--json: %v: %s", err, out)
	}
	if code != exitOK || !r.OK || !r.Citus || len(r.Targets) != 3 || len(r.Missing) != 0 {
		t.Fatalf("--json: exit %d: %s", code, out)
	}
	for i, tg := range r.Targets {
		role := "(citus worker)"
		if i == 0 {
			role = "(citus coordinator)"
		}
		if tg.Machine != i+1 || !strings.HasSuffix(tg.Database, role) {
			t.Errorf("target %d: %+v; want machine %d, %s", i, tg, i+1, role)
		}
	}

	// A worker's node is set there alone; set to another worker's, the
	// two share it and the check says so.
	for _, w := range cl.Workers {
		if code, out, errOut := sfgen(t, "node", "--dsn", w.DSN(), "--schema", "loc", "--datacenter", "1", "--machine", "7"); code != exitOK {
			t.Fatalf("set a worker's node: exit %d: %s%s", code, out, errOut)
		}
	}
	code, out, _ = sfgen(t, "node", "--dsn", coordinator, "--schema", "loc")
	if code != exitFail || !strings.Contains(out, "(citus coordinator) schema loc: datacenter 1, machine 1,") ||
		strings.Count(out, "(citus worker) schema loc: datacenter 1, machine 7,") != 2 ||
		strings.Count(out, "shared node: datacenter 1, machine 7") != 1 {
		t.Fatalf("two workers set to 1/7: exit %d:\n%s", code, out)
	}

	script, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: "copied", Datacenter: 1, Machine: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := citustest.Exec(context.Background(), coordinator, string(script)); err != nil {
		t.Fatal(err)
	}
	// From release 8 Citus copies the functions but not the node (the
	// fence: snowflake_node_bits() depends on a materialized view), so
	// the workers have no node rather than the coordinator's, and the
	// check names what Citus made its own.
	code, out, _ = sfgen(t, "node", "--dsn", coordinator, "--schema", "copied")
	if code != exitFail || strings.Contains(out, "shared node") || strings.Count(out, "(citus worker) schema copied: no sfgen") != 2 ||
		strings.Count(out, "Citus has made this sfgen its own") != 3 || !strings.Contains(out, "2 nodes of this Citus cluster cannot make IDs") {
		t.Fatalf("copied by Citus: exit %d:\n%s", code, out)
	}
}

// TestVerifyCitusWorker runs 'sfgen verify' on a Citus worker and on its
// coordinator, each with sfgen installed on its own (DDL propagation off,
// nodes 1/1 and 1/2): both pass, each generator check finding its own
// node. (A worker refuses the DDL of verify's temporary helpers unless
// its session keeps them local.)
func TestVerifyCitusWorker(t *testing.T) {
	cl := citustest.Start(t, 1)
	local := func(dsn string) string { return dsn + "&options=-c%20citus.enable_ddl_propagation%3Doff" }
	for i, dsn := range []string{cl.Coordinator.DSN(), cl.Workers[0].DSN()} {
		machine := string(rune('1' + i))
		if code, _, errOut := sfgen(t, "install", "--dsn", local(dsn), "--schema", "loc", "--datacenter", "1", "--machine", machine); code != exitOK {
			t.Fatalf("install on %s: exit %d: %s", dsn, code, errOut)
		}
		code, out, errOut := sfgen(t, "verify", "--dsn", dsn, "--schema", "loc")
		if code != exitOK || !strings.Contains(out, "0 with another node than 1/"+machine) {
			t.Errorf("verify %s: exit %d:\n%s%s", dsn, code, out, errOut)
		}
	}
}

// TestCitusInstall is the whole route on a Citus coordinator with two
// workers, through the CLI: install on the coordinator with node 1/1
// and on each worker without one (install keeps each Citus node's own);
// 'sfgen node' gives worker 1 node 1/2 before the distributed table
// exists and worker 2 node 1/3 after (an insert through worker 2 is
// refused until then, SF201); a 100,000-row INSERT ... SELECT and a
// 10,000-row COPY through the coordinator; concurrent inserts through
// the coordinator and through each worker; start_metadata_sync_to_node
// for both workers; inserts through each again. Every row is there once,
// every ID distinct, each with the node of the Citus node it was made on
// (the README's field positions, not sfgen's decoder); the fleet check
// over the three passes; the audit through the coordinator reports the
// three nodes, aggregated on the workers; verify passes on the
// coordinator and on a worker.
func TestCitusInstall(t *testing.T) {
	cl := citustest.Start(t, 2)
	ctx := context.Background()
	coordinator := cl.Coordinator.DSN()
	type citusNode struct {
		name, dsn string
		machine   int
	}
	nodes := []citusNode{{"coordinator", coordinator, 1}, {"w1", cl.Workers[0].DSN(), 2}, {"w2", cl.Workers[1].DSN(), 3}}

	code, out, errOut := sfgen(t, "install", "--dsn", coordinator, "--schema", "ids", "--datacenter", "1", "--machine", "1")
	if code != exitOK || !strings.Contains(out, "citus: installed on this coordinator alone") || strings.Contains(errOut, "no node is set") {
		t.Fatalf("install on the coordinator: exit %d:\n%s%s", code, out, errOut)
	}
	for _, w := range nodes[1:] {
		code, out, errOut := sfgen(t, "install", "--dsn", w.dsn, "--schema", "ids")
		if code != exitOK || !strings.Contains(out, "citus: installed on this worker alone") || !strings.Contains(errOut, "no node is set") {
			t.Fatalf("install on %s: exit %d:\n%s%s", w.name, code, out, errOut)
		}
	}
	setNode := func(n int) {
		t.Helper()
		if code, out, errOut := sfgen(t, "node", "--dsn", nodes[n].dsn, "--schema", "ids", "--datacenter", "1", "--machine", fmt.Sprint(nodes[n].machine)); code != exitOK {
			t.Fatalf("sfgen node on %s: exit %d: %s%s", nodes[n].name, code, out, errOut)
		}
	}
	var conns []*pgx.Conn
	connectTo := func(dsn string) {
		t.Helper()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		conns = append(conns, c)
	}
	for _, n := range nodes {
		connectTo(n.dsn)
	}
	exec := func(c *pgx.Conn, q string, args ...any) {
		t.Helper()
		if _, err := c.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	nodeOf := func(i int) string {
		t.Helper()
		var dc, m int
		if err := conns[i].QueryRow(ctx, "SELECT datacenter_id, machine_id FROM ids.snowflake_node()").Scan(&dc, &m); err != nil {
			t.Fatalf("the node of %s: %v", nodes[i].name, err)
		}
		return fmt.Sprintf("%d/%d", dc, m)
	}
	checkNodes := func(when string) {
		t.Helper()
		for i, n := range nodes {
			if got, want := nodeOf(i), fmt.Sprintf("1/%d", n.machine); got != want {
				t.Errorf("%s, the node of %s is %s; want %s", when, n.name, got, want)
			}
		}
	}

	setNode(1)
	exec(conns[0], `CREATE TABLE public.orders (id bigint NOT NULL DEFAULT ids.snowflake_next_id_local(), tenant int NOT NULL, via text NOT NULL, PRIMARY KEY (tenant, id))`)
	exec(conns[0], `SELECT create_distributed_table('public.orders', 'tenant')`)
	_, err := conns[2].Exec(ctx, "INSERT INTO public.orders (tenant, via) VALUES (1, 'w2')")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "SF201" {
		t.Fatalf("an insert through worker 2 before it has a node = %v; want SQLSTATE SF201", err)
	}
	setNode(2)
	checkNodes("after create_distributed_table")

	// Bulk loads through the coordinator, a catch-up due before each.
	stale := "SELECT setval('ids.snowflake_caught_up', trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 60000)"
	exec(conns[0], stale)
	began := time.Now()
	exec(conns[0], "INSERT INTO public.orders (tenant, via) SELECT g % 16, 'coordinator' FROM generate_series(1, 100000) g")
	tookInsert := time.Since(began)
	exec(conns[0], stale)
	rows := make([][]any, 10000)
	for i := range rows {
		rows[i] = []any{int32(i % 16), "coordinator"}
	}
	began = time.Now()
	if _, err := conns[0].CopyFrom(ctx, pgx.Identifier{"public", "orders"}, []string{"tenant", "via"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatalf("COPY through the coordinator: %v", err)
	}
	t.Logf("through the coordinator: 100,000-row INSERT ... SELECT %v, 10,000-row COPY %v", tookInsert.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	inserted := int64(110000)

	// Concurrent single-row inserts, 2 clients through each node.
	concurrently := func(d time.Duration) {
		t.Helper()
		var wg sync.WaitGroup
		var n atomic.Int64
		errs := make(chan error, 2*len(nodes))
		for _, nd := range nodes {
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := pgx.Connect(ctx, nd.dsn)
					if err != nil {
						errs <- err
						return
					}
					defer c.Close(ctx)
					for end, i := time.Now().Add(d), 0; time.Now().Before(end); i++ {
						if _, err := c.Exec(ctx, "INSERT INTO public.orders (tenant, via) VALUES ($1, $2)", i%16, nd.name); err != nil {
							errs <- fmt.Errorf("through %s: %w", nd.name, err)
							return
						}
						n.Add(1)
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		inserted += n.Load()
		t.Logf("%d single-row inserts in %v, 2 clients through each of %d nodes", n.Load(), d, len(nodes))
	}
	concurrently(3 * time.Second)

	for _, w := range cl.Workers {
		host, port := w.Address()
		exec(conns[0], "SELECT start_metadata_sync_to_node($1, $2)", host, port)
	}
	checkNodes("after start_metadata_sync_to_node")
	concurrently(time.Second)

	// A node added: Citus copies it the distributed table's default,
	// snowflake_next_id_local(), and nothing else of sfgen's, so it makes
	// no ID (and the fleet check says it is missing) until sfgen is
	// installed there with a node of its own, over that copy.
	added := cl.AddWorker(t)
	nodes = append(nodes, citusNode{"w3", added.DSN(), 4})
	connectTo(added.DSN())
	if _, err := conns[3].Exec(ctx, "INSERT INTO public.orders (tenant, via) VALUES (1, 'w3')"); !errors.As(err, &pe) || pe.Code != "42883" {
		t.Fatalf("an insert through a node added without sfgen = %v; want SQLSTATE 42883 (no snowflake_next_id() there)", err)
	}
	code, out, errOut = sfgen(t, "node", "--dsn", coordinator, "--schema", "ids")
	if code != exitFail || !strings.Contains(out, "FAIL: 1 node of this Citus cluster cannot make IDs") {
		t.Errorf("fleet check with a node added without sfgen: exit %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = sfgen(t, "install", "--dsn", added.DSN(), "--schema", "ids", "--datacenter", "1", "--machine", "4")
	if code != exitOK {
		t.Fatalf("install on the added node: exit %d:\n%s%s", code, out, errOut)
	}
	checkNodes("after adding a node")
	concurrently(time.Second)

	var total, distinct int64
	if err := conns[0].QueryRow(ctx, "SELECT count(*), count(DISTINCT id) FROM public.orders").Scan(&total, &distinct); err != nil {
		t.Fatal(err)
	}
	if total != inserted || distinct != total {
		t.Errorf("%d rows, %d distinct IDs; want the %d inserted, all distinct", total, distinct, inserted)
	}
	// The node of each row from the README's layout: datacenter at bit
	// 17, machine at bit 12, 5 bits each.
	byVia, err := conns[0].Query(ctx, "SELECT via, (id >> 17) & 31, (id >> 12) & 31, count(*) FROM public.orders GROUP BY 1, 2, 3 ORDER BY 1, 2, 3")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for byVia.Next() {
		var via string
		var dc, m, n int64
		if err := byVia.Scan(&via, &dc, &m, &n); err != nil {
			t.Fatal(err)
		}
		got[fmt.Sprintf("%s %d/%d", via, dc, m)] = n
	}
	if err := byVia.Err(); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if got[fmt.Sprintf("%s 1/%d", n.name, n.machine)] == 0 {
			t.Errorf("no row made through %s with its node 1/%d", n.name, n.machine)
		}
	}
	if len(got) != len(nodes) {
		t.Errorf("rows by where they were made and their node: %v; want each Citus node's rows with its node alone", got)
	}

	code, out, errOut = sfgen(t, "node", "--dsn", coordinator, "--schema", "ids")
	if code != exitOK || !strings.Contains(out, "ok: 4 schemas with sfgen, each with its own node") {
		t.Errorf("fleet check: exit %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = sfgen(t, "audit", "--dsn", coordinator, "--table", "orders", "--json")
	var r struct {
		Rows        int64 `json:"rows"`
		Distributed bool  `json:"distributed"`
		Nodes       []struct {
			Datacenter int64 `json:"datacenter_id"`
			Machine    int64 `json:"machine_id"`
			Rows       int64 `json:"rows"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitOK {
		t.Fatalf("audit: exit %d, %v:\n%s%s", code, err, out, errOut)
	}
	if r.Rows != total || !r.Distributed || len(r.Nodes) != len(nodes) {
		t.Errorf("audit through the coordinator: %+v; want %d rows, distributed, %d nodes", r, total, len(nodes))
	}
	for i, n := range r.Nodes {
		if n.Datacenter != 1 || n.Machine != int64(i+1) {
			t.Errorf("audit node %d: %+v; want 1/%d", i, n, i+1)
		}
	}
	// The node set with snowflake_set_node() in SQL on the coordinator,
	// DDL propagation on, changes the coordinator's alone.
	exec(conns[0], "SELECT ids.snowflake_set_node(1, 9)")
	nodes[0].machine = 9
	checkNodes("after snowflake_set_node() on the coordinator")
	for _, n := range nodes[:2] {
		code, out, errOut := sfgen(t, "verify", "--dsn", n.dsn, "--schema", "ids")
		if code != exitOK || !strings.Contains(out, fmt.Sprintf("0 with another node than 1/%d", n.machine)) {
			t.Errorf("verify on %s: exit %d:\n%s%s", n.name, code, out, errOut)
		}
	}
}

// TestConvertCitus runs 'sfgen convert' through a Citus coordinator,
// sfgen installed on each node with its own node. A reference table
// keyed by bigserial (replicated to every node, writable through each):
// its key defaults to snowflake_next_id_local() after it, and rows
// inserted through the coordinator and through each worker get IDs above
// the old keys with the node of the Citus node that made them (the
// workers' nodes unchanged: Citus copied nothing of the coordinator's).
// Refused, changing nothing: a distributed table's distribution column
// (Citus does not let its default change; with unique keys there always
// including it, that is every key convert could take) and an integer
// key (convert would widen it).
func TestConvertCitus(t *testing.T) {
	cl := citustest.Start(t, 2)
	ctx := context.Background()
	dsns := []string{cl.Coordinator.DSN(), cl.Workers[0].DSN(), cl.Workers[1].DSN()}
	for i, dsn := range dsns {
		if code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "ids", "--datacenter", "1", "--machine", fmt.Sprint(i+1)); code != exitOK {
			t.Fatalf("install on node %d: exit %d: %s%s", i, code, out, errOut)
		}
	}
	coordinator := dsns[0]
	for _, q := range []string{
		"CREATE TABLE public.orders (id bigserial PRIMARY KEY, via text NOT NULL)",
		"SELECT create_distributed_table('public.orders', 'id')",
		"CREATE TABLE public.refs (id bigserial PRIMARY KEY, via text NOT NULL)",
		"SELECT create_reference_table('public.refs')",
		"INSERT INTO public.refs (via) SELECT 'old' FROM generate_series(1, 1000)",
		"CREATE TABLE public.small (id integer PRIMARY KEY, via text)",
		"SELECT create_reference_table('public.small')",
	} {
		if err := citustest.Exec(ctx, coordinator, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ table, want string }{
		{"orders", "column public.orders.id is the column Citus distributes table public.orders by"},
		{"small", "table public.small is a Citus table (distributed or reference), and convert does not change the type of its key there"},
	} {
		code, out, errOut := sfgen(t, "convert", "--dsn", coordinator, "--table", c.table, "--sfgen-schema", "ids", "--rewrite")
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("convert of %s: exit %d; want %d and %q:\n%s%s", c.table, code, exitUsage, c.want, out, errOut)
		}
	}
	code, out, errOut := sfgen(t, "convert", "--dsn", coordinator, "--table", "refs", "--sfgen-schema", "ids")
	if code != exitOK || !strings.Contains(out, "to ids.snowflake_next_id_local()") {
		t.Errorf("convert: exit %d:\n%s%s", code, out, errOut)
	}
	for i, dsn := range dsns {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var def string
		if err := c.QueryRow(ctx, "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE d.adrelid = 'public.refs'::regclass AND a.attname = 'id'").Scan(&def); err != nil || def != "ids.snowflake_next_id_local()" {
			t.Errorf("node %d: the default of refs.id is %q (%v); want ids.snowflake_next_id_local()", i, def, err)
		}
		var m int
		if err := c.QueryRow(ctx, "SELECT machine_id FROM ids.snowflake_node()").Scan(&m); err != nil || m != i+1 {
			t.Errorf("node %d after the conversion: machine %d, %v; want %d", i, m, err, i+1)
		}
		for range 50 {
			if _, err := c.Exec(ctx, "INSERT INTO public.refs (via) VALUES ($1)", fmt.Sprint(i+1)); err != nil {
				t.Fatalf("insert through node %d after the conversion: %v", i, err)
			}
		}
	}
	c, err := pgx.Connect(ctx, coordinator)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT via, count(*), count(DISTINCT id), min(id) > 1000,
		count(*) FILTER (WHERE via <> 'old' AND (id >> 12) & 1023 <> 32 + via::int) FROM public.refs GROUP BY via ORDER BY via`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var via string
		var n, distinct, other int64
		var above bool
		if err := rows.Scan(&via, &n, &distinct, &above, &other); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s:%d/%d/%v/%d", via, n, distinct, above || via == "old", other))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := "[1:50/50/true/0 2:50/50/true/0 3:50/50/true/0 old:1000/1000/true/0]"; fmt.Sprint(got) != want {
		t.Errorf("rows by where they were made (rows/distinct/above the old keys/with another node) = %v; want %s", got, want)
	}
}

// TestCitusRepair (issue 44): a cluster on release 7, each node installed
// alone with its own node, whose workers Citus overwrote when a role
// distributed a table defaulting to snowflake_next_id() (the workers got
// the coordinator's node and their sequences Citus's range, where inserts
// fail), is repaired by 'sfgen install' on each node with its own node:
//   - before, 'sfgen node --dsn COORDINATOR' fails naming what Citus made
//     its own and the fix, and 'sfgen install' on a worker without a node
//     refuses (exit 2), changing nothing;
//   - after, every node has its own node, no sfgen object is Citus's but
//     snowflake_next_id_local(), and the fleet check passes;
//   - inserts through every node work again, each with its node, and none
//     repeats an ID made before: worker 1 had made IDs a minute ahead of
//     the clock (its state moved on by hand), which the catch-up alone
//     would have made again; install's resume step raises the state above
//     them.
func TestCitusRepair(t *testing.T) {
	cl := citustest.Start(t, 2)
	ctx := context.Background()
	dsns := []string{cl.Coordinator.DSN(), cl.Workers[0].DSN(), cl.Workers[1].DSN()}
	conns := make([]*pgx.Conn, len(dsns))
	for i, dsn := range dsns {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		conns[i] = c
	}
	exec := func(i int, q string, args ...any) {
		t.Helper()
		if _, err := conns[i].Exec(ctx, q, args...); err != nil {
			t.Fatalf("node %d: %s: %v", i, q, err)
		}
	}
	for i := range conns {
		script, err := released.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: int64(i + 1)}, 7)
		if err != nil {
			t.Fatal(err)
		}
		exec(i, "SET citus.enable_ddl_propagation = off")
		exec(i, string(script))
		exec(i, "RESET citus.enable_ddl_propagation")
	}
	exec(0, "CREATE TABLE public.orders (tenant int NOT NULL, id bigint NOT NULL DEFAULT ids.snowflake_next_id_local(), via int NOT NULL, repaired bool NOT NULL DEFAULT false, PRIMARY KEY (tenant, id))")
	exec(0, "SELECT create_distributed_table('public.orders', 'tenant')")
	insert := func(i, n int, repaired bool) {
		t.Helper()
		for k := range n {
			exec(i, "INSERT INTO public.orders (tenant, via, repaired) VALUES ($1, $2, $3)", k%7, i, repaired)
		}
	}
	// Worker 1 a minute ahead (IDs borrowed, or a clock that ran fast).
	exec(1, "SELECT setval('ids.snowflake_state', (trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint + 60000) << 12)")
	for i := range conns {
		insert(i, 100, false)
	}
	var before int64
	if err := conns[0].QueryRow(ctx, "SELECT count(*) FROM public.orders").Scan(&before); err != nil || before != 300 {
		t.Fatalf("%d rows before, %v; want 300", before, err)
	}

	// Release 7's flaw: a table defaulting to snowflake_next_id().
	exec(0, "CREATE TABLE public.bad (tenant int NOT NULL, id bigint DEFAULT ids.snowflake_next_id())")
	exec(0, "SELECT create_distributed_table('public.bad', 'tenant')")
	nodeBits := func(i int) (bits int64) {
		t.Helper()
		if err := conns[i].QueryRow(ctx, "SELECT ids.snowflake_node_bits()").Scan(&bits); err != nil {
			t.Fatal(err)
		}
		return bits
	}
	if nodeBits(1) != nodeBits(0) || nodeBits(2) != nodeBits(0) {
		t.Fatalf("release 7: the workers' nodes %d and %d are not the coordinator's %d: Citus did not overwrite them; the test cannot show the repair", nodeBits(1), nodeBits(2), nodeBits(0))
	}
	if _, err := conns[1].Exec(ctx, "INSERT INTO public.orders (tenant, via) VALUES (1, 1)"); err == nil {
		t.Fatal("an insert through an overwritten worker worked; want it to fail (Citus's sequence range)")
	}

	code, out, errOut := sfgen(t, "node", "--dsn", dsns[0], "--schema", "ids")
	if code != exitFail || !strings.Contains(out, "Citus has made this sfgen its own") || !strings.Contains(out, `docs/citus.md, "A node Citus overwrote"`) {
		t.Errorf("sfgen node on the coordinator before the repair: exit %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = sfgen(t, "install", "--dsn", dsns[1], "--schema", "ids")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "Citus made its own") || !strings.Contains(errOut, "--datacenter N --machine N") {
		t.Errorf("sfgen install on an overwritten worker without a node: exit %d:\n%s%s", code, out, errOut)
	}
	var release int
	if err := conns[1].QueryRow(ctx, "SELECT ids.snowflake_release()").Scan(&release); err != nil || release != 7 {
		t.Errorf("after the refusal, release %d, %v; want 7, unchanged", release, err)
	}

	for i := range conns {
		code, out, errOut := sfgen(t, "install", "--dsn", dsns[i], "--schema", "ids", "--datacenter", "1", "--machine", fmt.Sprint(i+1))
		if code != exitOK || !strings.Contains(out, fmt.Sprintf("its node is now datacenter 1, machine %d, as given", i+1)) || !strings.Contains(out, "above every ID of that node stored here") {
			t.Fatalf("sfgen install on node %d: exit %d:\n%s%s", i, code, out, errOut)
		}
	}
	for i := range conns {
		if got, want := nodeBits(i), int64(1<<17|(i+1)<<12); got != want {
			t.Errorf("node %d after the repair: node bits %d; want %d", i, got, want)
		}
		var copied int
		if err := conns[i].QueryRow(ctx, `SELECT count(*) FROM pg_dist_object o
			WHERE (o.classid = 'pg_proc'::regclass AND o.objid IN (SELECT oid FROM pg_proc WHERE pronamespace = 'ids'::regnamespace AND proname <> 'snowflake_next_id_local'))
				OR (o.classid = 'pg_class'::regclass AND o.objid IN (SELECT oid FROM pg_class WHERE relnamespace = 'ids'::regnamespace))`).Scan(&copied); err != nil || copied != 0 {
			t.Errorf("node %d after the repair: %d sfgen objects in pg_dist_object, %v; want none", i, copied, err)
		}
	}
	if code, out, errOut := sfgen(t, "node", "--dsn", dsns[0], "--schema", "ids"); code != exitOK {
		t.Errorf("sfgen node on the coordinator after the repair: exit %d:\n%s%s", code, out, errOut)
	}
	for i := range conns {
		insert(i, 100, true)
	}
	var rows, distinct, foreign int64
	if err := conns[0].QueryRow(ctx, "SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE (id >> 12) & 1023 <> (1 << 5 | via + 1)) FROM public.orders").Scan(&rows, &distinct, &foreign); err != nil {
		t.Fatal(err)
	}
	if rows != 600 || distinct != rows || foreign != 0 {
		t.Errorf("after the repair: %d rows, %d distinct IDs, %d with another node than the one inserted through; want 600, all distinct, none", rows, distinct, foreign)
	}
	for i := range conns {
		var lastBefore, firstAfter int64
		if err := conns[0].QueryRow(ctx, "SELECT max(id) FILTER (WHERE NOT repaired), min(id) FILTER (WHERE repaired) FROM public.orders WHERE via = $1", i).Scan(&lastBefore, &firstAfter); err != nil {
			t.Fatal(err)
		}
		if firstAfter <= lastBefore {
			t.Errorf("node %d: its first ID after the repair %d is not above its last before %d", i, firstAfter, lastBefore)
		}
	}
}

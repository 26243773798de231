package sqlgen_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgcluster/citustest"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// TestCitusBulkLoads: on a Citus coordinator with two workers, a
// distributed table whose default is snowflake_next_id() (release 8:
// snowflake_next_id_local(), the same expression) takes a
// 100,000-row INSERT ... SELECT and a 10,000-row COPY through the
// coordinator, the catch-up due before each (so that the slow path runs
// inside them, many times over): every ID distinct, with the
// coordinator's node. Release 6's catch-up, a subtransaction, failed
// there ("another command is already in progress"); its result on the
// same load is logged, for comparison.
func TestCitusBulkLoads(t *testing.T) {
	cl := citustest.Start(t, 2)
	ctx := context.Background()
	conn := connect(t, cl.Coordinator.DSN())
	for _, c := range []struct {
		schema  string
		release int
		machine int64
	}{{"r6", 6, 2}, {"r7", sqlgen.Latest, 1}} {
		script, err := released.Script(sqlgen.Options{Layout: tw, Schema: c.schema, Datacenter: 1, Machine: c.machine}, c.release)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, conn, string(script))
		table := c.schema + ".orders"
		// From release 8 Citus refuses snowflake_next_id() as a
		// distributed table's default (TestCitusFence).
		generator := "snowflake_next_id"
		if c.release >= 8 {
			generator = "snowflake_next_id_local"
		}
		mustExec(t, conn, fmt.Sprintf(`CREATE TABLE %s (id bigint NOT NULL DEFAULT %s.%s(), tenant int NOT NULL, note text, PRIMARY KEY (tenant, id));
			SELECT create_distributed_table('%s', 'tenant')`, table, c.schema, generator, table))
		stale := fmt.Sprintf("SELECT setval('%s.%s', trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 60000)", c.schema, catalog.CatchUpGuard(c.release))
		load := func() error {
			mustExec(t, conn, stale)
			if _, err := conn.Exec(ctx, fmt.Sprintf("INSERT INTO %s (tenant, note) SELECT g %% 16, 'bulk' FROM generate_series(1, 100000) g", table)); err != nil {
				return fmt.Errorf("INSERT ... SELECT: %w", err)
			}
			mustExec(t, conn, stale)
			rows := make([][]any, 10000)
			for i := range rows {
				rows[i] = []any{int32(i % 16), "copy"}
			}
			if _, err := conn.CopyFrom(ctx, pgx.Identifier{c.schema, "orders"}, []string{"tenant", "note"}, pgx.CopyFromRows(rows)); err != nil {
				return fmt.Errorf("COPY: %w", err)
			}
			return nil
		}
		err = load()
		if c.release < 7 {
			t.Logf("release %d on Citus, the same loads: %v", c.release, err)
			continue
		}
		if err != nil {
			t.Fatalf("release %d: %v", c.release, err)
		}
		var n, distinct, other int64
		if err := conn.QueryRow(ctx, fmt.Sprintf("SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE (id >> 12) & 1023 <> %d) FROM %s", 1<<5|1, table)).Scan(&n, &distinct, &other); err != nil {
			t.Fatal(err)
		}
		if n != 110000 || distinct != n || other != 0 {
			t.Fatalf("release %d: %d rows, %d distinct IDs, %d with another node than 1/1; want 110000, all distinct, none", c.release, n, distinct, other)
		}
		var first int64
		if err := conn.QueryRow(ctx, "SELECT min(id) FROM "+table).Scan(&first); err != nil {
			t.Fatal(err)
		}
		if d, err := tw.Decompose(snowflake.ID(first)); err != nil || d.Datacenter != 1 || d.Machine != 1 {
			t.Fatalf("release %d: first ID %d decomposes to %+v, %v; want node 1/1", c.release, first, d, err)
		}
	}
}

var (
	sqlComment     = regexp.MustCompile(`--[^\n]*`)
	exceptionBlock = regexp.MustCompile(`(?i)\bEXCEPTION\s+WHEN\b`)
)

// TestNoSubtransactionOnTheIDPath: release 7's snowflake_next_state(),
// the only PL/pgSQL on the way to an ID, has no EXCEPTION block (a
// subtransaction per catch-up, which Citus cannot run in a bulk load),
// and snowflake_next_id() calls nothing else of PL/pgSQL; read from the
// database, as installed.
func TestNoSubtransactionOnTheIDPath(t *testing.T) {
	conn := connect(t, pgtest.DSN(t))
	installScript(t, conn, sqlgen.Options{Layout: tw})
	for _, f := range []string{"snowflake_next_state()", "snowflake_next_id()"} {
		var lang, src string
		if err := conn.QueryRow(context.Background(), "SELECT l.lanname, p.prosrc FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE p.oid = $1::regprocedure", "public."+f).Scan(&lang, &src); err != nil {
			t.Fatal(err)
		}
		if exceptionBlock.MatchString(sqlComment.ReplaceAllString(src, "")) {
			t.Errorf("%s (%s) has an EXCEPTION block: a subtransaction on the way to every ID that catches up", f, lang)
		}
		if f == "snowflake_next_id()" && lang != "sql" {
			t.Errorf("snowflake_next_id() is %s; want sql", lang)
		}
	}
}

// TestLocalIDRecordsNoDependency: snowflake_next_id_local(), the column
// default for distributed tables on Citus, records no dependency on what
// it calls (Citus copies to the workers whatever a default's function
// records, and would copy this node's state and node over theirs), where
// snowflake_next_id() records its sequences and functions; the planner
// inlines it to the same expression (no function call left in the plan);
// and its IDs are the node's, after snowflake_next_id()'s.
func TestLocalIDRecordsNoDependency(t *testing.T) {
	ctx := context.Background()
	conn := connect(t, pgtest.DSN(t))
	installScript(t, conn, sqlgen.Options{Layout: tw, Schema: "loc", Datacenter: 3, Machine: 5})
	deps := func(f string) (n int64) {
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_depend
			WHERE classid = 'pg_proc'::regclass AND objid = $1::regprocedure AND deptype = 'n'
				AND refclassid IN ('pg_class'::regclass, 'pg_proc'::regclass, 'pg_operator'::regclass)`, f).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := deps("loc.snowflake_next_id()"); n == 0 {
		t.Fatalf("snowflake_next_id() records no dependency: the query sees none")
	}
	if n := deps("loc.snowflake_next_id_local()"); n != 0 {
		t.Errorf("snowflake_next_id_local() records %d dependencies on relations, functions or operators; want none", n)
	}
	plan := func(call string) string {
		var lines []string
		rows, err := conn.Query(ctx, "EXPLAIN (VERBOSE, COSTS OFF) SELECT "+call)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, l)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(lines)
	}
	local, direct := plan("loc.snowflake_next_id_local()"), plan("loc.snowflake_next_id()")
	if regexp.MustCompile(`snowflake_next_id(_local)?\(\)`).MatchString(local) || local != direct {
		t.Errorf("snowflake_next_id_local() is not inlined to snowflake_next_id()'s expression:\n%s\nwant\n%s", local, direct)
	}
	var a, b int64
	if err := conn.QueryRow(ctx, "SELECT loc.snowflake_next_id()").Scan(&a); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT loc.snowflake_next_id_local()").Scan(&b); err != nil {
		t.Fatal(err)
	}
	d, err := tw.Decompose(snowflake.ID(b))
	if err != nil || b <= a || d.Datacenter != 3 || d.Machine != 5 {
		t.Errorf("snowflake_next_id_local() = %d (%+v, %v) after snowflake_next_id() = %d; want a later ID of node 3/5", b, d, err, a)
	}
}

// TestSetNodeLeavesCitusSettingAsItWas: snowflake_set_node() turns
// Citus' DDL propagation off for its replacement of snowflake_node_bits()
// alone (TestCitusInstall: else Citus sends the node to every worker),
// and gives the session's setting back (here a placeholder of it), in
// the transaction and after; without the setting it defines none.
func TestSetNodeLeavesCitusSettingAsItWas(t *testing.T) {
	ctx := context.Background()
	conn := connect(t, pgtest.DSN(t))
	installScript(t, conn, sqlgen.Options{Layout: tw, Schema: "citusset", Datacenter: 1, Machine: 1})
	setting := func() (v *string) {
		t.Helper()
		if err := conn.QueryRow(ctx, "SELECT current_setting('citus.enable_ddl_propagation', true)").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	mustExec(t, conn, "SELECT citusset.snowflake_set_node(1, 2)")
	if v := setting(); v != nil {
		t.Errorf("after snowflake_set_node() in a session without it, citus.enable_ddl_propagation = %q; want undefined", *v)
	}
	mustExec(t, conn, "SET citus.enable_ddl_propagation = 'on'")
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "SELECT citusset.snowflake_set_node(1, 3)")
	if v := setting(); v == nil || *v != "on" {
		t.Errorf("in the transaction after snowflake_set_node(), citus.enable_ddl_propagation = %v; want on, as the session had it", v)
	}
	mustExec(t, conn, "COMMIT")
	if v := setting(); v == nil || *v != "on" {
		t.Errorf("after the transaction, citus.enable_ddl_propagation = %v; want on", v)
	}
	var m int
	if err := conn.QueryRow(ctx, "SELECT machine_id FROM citusset.snowflake_node()").Scan(&m); err != nil || m != 3 {
		t.Errorf("snowflake_node() machine %d, %v; want 3", m, err)
	}
}

// TestCitusFence (issue 44): on a Citus coordinator with two workers, each
// node installed on its own with a node of its own, a role with only USAGE
// on sfgen's schema and ID-making, and then a superuser, give distributed
// tables every default that reaches the generator's objects: the
// generator, its node, its state by name, its guard by oid (which needs
// no privilege at all), and a SQL function of the role's own over the
// generator. On release 7 (the control) Citus copied the coordinator's
// node and sequences over the workers'; from release 8 it refuses each
// table, naming the fence, and no node, state or guard of any node
// changes. Then a table defaulting to snowflake_next_id_local() takes
// inserts through every node at once: all distinct, each with its node.
func TestCitusFence(t *testing.T) {
	cl := citustest.Start(t, 2)
	ctx := context.Background()
	dsns := []string{cl.Coordinator.DSN(), cl.Workers[0].DSN(), cl.Workers[1].DSN()}
	conns := make([]*pgx.Conn, len(dsns))
	for i, dsn := range dsns {
		conns[i] = connect(t, dsn)
	}
	// The role, on every node (Citus propagates it); the cluster is the
	// test's own, and goes with it.
	const role = "app"
	mustExec(t, conns[0], "CREATE ROLE "+role+" LOGIN PASSWORD 'app'; GRANT CREATE ON DATABASE postgres TO "+role)
	u, err := url.Parse(dsns[0])
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "app")
	appConn := connect(t, u.String())

	// What Citus could overwrite on a node, as one line.
	type snapshot struct{ node, state, guard string }
	look := func(i int, schema string) (s snapshot) {
		t.Helper()
		if err := conns[i].QueryRow(ctx, fmt.Sprintf(`SELECT %[1]s.snowflake_node_bits()::text,
			(SELECT format('%%s..%%s', min_value, max_value) FROM pg_sequences WHERE schemaname = '%[1]s' AND sequencename = 'snowflake_state'),
			(SELECT format('%%s..%%s', min_value, max_value) FROM pg_sequences WHERE schemaname = '%[1]s' AND sequencename = 'snowflake_caught_up')`, schema)).
			Scan(&s.node, &s.state, &s.guard); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		schema     string
		release    int
		datacenter int64
	}{{"ids7", 7, 2}, {"ids8", sqlgen.Latest, 1}} {
		t.Run(fmt.Sprint("release ", c.release), func(t *testing.T) {
			for i, conn := range conns {
				script, err := released.Script(sqlgen.Options{Layout: tw, Schema: c.schema, Datacenter: c.datacenter, Machine: int64(i + 1)}, c.release)
				if err != nil {
					t.Fatal(err)
				}
				mustExec(t, conn, "SET citus.enable_ddl_propagation = off")
				mustExec(t, conn, string(script))
				mustExec(t, conn, "GRANT USAGE ON SCHEMA "+c.schema+" TO "+role)
				if c.release >= 8 {
					mustExec(t, conn, fmt.Sprintf("SELECT %s.snowflake_grant('%s')", c.schema, role))
				}
				mustExec(t, conn, "RESET citus.enable_ddl_propagation")
			}
			before := []snapshot{look(0, c.schema), look(1, c.schema), look(2, c.schema)}
			var guardOID uint32
			if err := conns[0].QueryRow(ctx, "SELECT '"+c.schema+".snowflake_caught_up'::regclass::oid").Scan(&guardOID); err != nil {
				t.Fatal(err)
			}
			mustExec(t, appConn, "CREATE SCHEMA "+c.schema+"_app")
			mustExec(t, appConn, fmt.Sprintf("CREATE FUNCTION %[1]s_app.my_id() RETURNS bigint LANGUAGE sql VOLATILE RETURN %[1]s.snowflake_next_id()", c.schema))
			defaults := []string{
				c.schema + ".snowflake_next_id()",
				c.schema + ".snowflake_node_bits()",
				"nextval('" + c.schema + ".snowflake_state')",
				fmt.Sprintf("nextval('%d'::regclass)", guardOID), // a constant of the oid: recorded, as a name is
				c.schema + "_app.my_id()",
			}
			refused := 0
			for who, conn := range map[string]*pgx.Conn{"the role": appConn, "a superuser": conns[0]} {
				for i, d := range defaults {
					table := fmt.Sprintf("%s_app.t_%d_%d", c.schema, len(who), i)
					mustExec(t, conn, fmt.Sprintf("CREATE TABLE %s (tenant int NOT NULL, id bigint DEFAULT %s)", table, d))
					_, err := conn.Exec(ctx, fmt.Sprintf("SELECT create_distributed_table('%s', 'tenant')", table))
					var pe *pgconn.PgError
					switch {
					case c.release < 8:
						t.Logf("release %d: %s distributes a table with DEFAULT %s: %v", c.release, who, d, err)
					case errors.As(err, &pe) && pe.Code == "0A000" && strings.Contains(pe.Message, catalog.CitusFence):
						refused++
					default:
						t.Errorf("%s distributes a table with DEFAULT %s: %v; want Citus's refusal naming %s", who, d, err, catalog.CitusFence)
					}
				}
			}
			after := []snapshot{look(0, c.schema), look(1, c.schema), look(2, c.schema)}
			changed := 0
			for i := range after {
				if after[i] != before[i] {
					changed++
					if c.release >= 8 {
						t.Errorf("node %d: node and sequence ranges %+v before, %+v after; want unchanged", i, before[i], after[i])
					}
				}
			}
			if c.release < 8 {
				// The control: the test sees what the fence stops.
				if changed != 2 {
					t.Fatalf("release %d: %d nodes changed (%+v -> %+v); want the two workers", c.release, changed, before, after)
				}
				return
			}
			if refused != 2*len(defaults) {
				t.Fatalf("%d of %d tables refused", refused, 2*len(defaults))
			}

			// The route that works: snowflake_next_id_local(), inserts
			// through every node at once.
			table := c.schema + "_app.orders"
			mustExec(t, appConn, fmt.Sprintf("CREATE TABLE %s (tenant int NOT NULL, id bigint NOT NULL DEFAULT %s.snowflake_next_id_local(), via int NOT NULL, PRIMARY KEY (tenant, id))", table, c.schema))
			mustExec(t, appConn, fmt.Sprintf("SELECT create_distributed_table('%s', 'tenant')", table))
			const perNode = 500
			errs := make(chan error, len(dsns))
			for i := range dsns {
				go func() {
					conn, err := pgx.Connect(ctx, dsns[i])
					if err != nil {
						errs <- err
						return
					}
					defer conn.Close(ctx)
					for n := range perNode {
						if _, err := conn.Exec(ctx, fmt.Sprintf("INSERT INTO %s (tenant, via) VALUES ($1, $2)", table), n%7, i); err != nil {
							errs <- fmt.Errorf("node %d: %w", i, err)
							return
						}
					}
					errs <- nil
				}()
			}
			for range dsns {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			var rows, distinct, foreign int64
			if err := conns[0].QueryRow(ctx, fmt.Sprintf("SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE (id >> 12) & 1023 <> (%d << 5 | via + 1)) FROM %s", c.datacenter, table)).
				Scan(&rows, &distinct, &foreign); err != nil {
				t.Fatal(err)
			}
			if rows != perNode*int64(len(dsns)) || distinct != rows || foreign != 0 {
				t.Errorf("%d rows, %d distinct IDs, %d with another node than the one inserted through; want %d, all distinct, none", rows, distinct, foreign, perNode*len(dsns))
			}
		})
	}
}

package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestSetNodeOverloadAttack replays issue 22's first attack: a role with
// CREATE on sfgen's schema adds snowflake_set_node(double precision,
// double precision), whose body makes it a superuser, and waits for a
// superuser to set the node. The call release 3's 'sfgen node' sent, with
// untyped parameters, picks mallory's overload (shown first, so that the
// test can tell); 'sfgen node' now refuses the schema, naming the
// overload and the fix, and mallory stays what it was.
func TestSetNodeOverloadAttack(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := installSchema(t, dsn, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 1})
	mallory := pgtest.Role(t, dsn, "mallory", "NOLOGIN")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	superuser := func() bool {
		var s bool
		if err := conn.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = $1", mallory).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	exec("GRANT USAGE, CREATE ON SCHEMA " + schema + " TO " + mallory)
	exec("SET ROLE " + mallory)
	exec(fmt.Sprintf(`CREATE FUNCTION %[1]s.snowflake_set_node(datacenter_id double precision, machine_id double precision)
RETURNS void LANGUAGE plpgsql AS $fn$ BEGIN EXECUTE 'ALTER ROLE %[2]s SUPERUSER'; END $fn$`, schema, mallory))
	exec("RESET ROLE")

	// The attack works on the call as release 3 sent it.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT "+schema+".snowflake_set_node($1, $2)", 3, 5); err != nil {
		t.Fatal(err)
	}
	var escalated bool
	if err := tx.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = $1", mallory).Scan(&escalated); err != nil {
		t.Fatal(err)
	}
	tx.Rollback(ctx)
	if !escalated {
		t.Fatal("the untyped call did not pick mallory's overload: this test cannot tell")
	}

	code, out, errOut := sfgen(t, "node", "--dsn", dsn, "--schema", schema, "--datacenter", "3", "--machine", "5")
	overload := fmt.Sprintf("function %s.snowflake_set_node(double precision,double precision) owned by %s", schema, mallory)
	revoke := fmt.Sprintf(`REVOKE CREATE ON SCHEMA "%s" FROM %s`, schema, mallory)
	if code != exitFail || out != "" || !strings.Contains(errOut, overload) || !strings.Contains(errOut, revoke) {
		t.Errorf("node: exit %d, stdout %q, stderr %q; want 1 naming %q and %q", code, out, errOut, overload, revoke)
	}
	oneLine(t, errOut)
	if superuser() {
		t.Fatal("sfgen node made mallory a superuser")
	}
	// With mallory's CREATE revoked and the overload dropped, the schema is
	// trusted again and the node is set, through the typed call.
	exec("REVOKE CREATE ON SCHEMA " + schema + " FROM " + mallory)
	exec("DROP FUNCTION " + schema + ".snowflake_set_node(double precision, double precision)")
	if code, out, errOut := sfgen(t, "node", "--dsn", dsn, "--schema", schema, "--datacenter", "3", "--machine", "5"); code != exitOK ||
		!strings.HasPrefix(out, "datacenter 1, machine 1 -> datacenter 3, machine 5") {
		t.Errorf("node after the fix: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestCommandsRefuseOverloads plants, as a role that then loses its
// CREATE, overloads of every function any sfgen release made (one
// parameter more or another type: double precision, numeric, text, and an
// extra parameter with a default, which makes sfgen's own calls
// ambiguous), each logging that it ran, and runs every command that calls
// sfgen's functions: each exits 1 naming an overload, and none ran.
func TestCommandsRefuseOverloads(t *testing.T) {
	dsn := pgtest.DSN(t)
	mallory := pgtest.Role(t, dsn, "mallory", "NOLOGIN")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(q string) {
		t.Helper()
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("CREATE TABLE public.overloads_ran (fn text)")
	exec("GRANT INSERT ON public.overloads_ran TO PUBLIC")
	for _, variant := range []struct{ name, typ, extra string }{
		{"double precision", "double precision", ""},
		{"numeric", "numeric", ""},
		{"text", "text", ""},
		{"a default", "", "x integer DEFAULT 0"},
	} {
		t.Run(variant.name, func(t *testing.T) {
			schema := installSchema(t, dsn, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 1})
			exec("GRANT USAGE, CREATE ON SCHEMA " + schema + " TO " + mallory)
			exec("SET ROLE " + mallory)
			var planted []string
			for _, sig := range catalog.KnownFunctions {
				name, params, _ := strings.Cut(strings.TrimSuffix(sig, ")"), "(")
				var args []string
				for i, p := range strings.Split(params, ", ") {
					switch {
					case p == "":
					case variant.typ != "":
						args = append(args, fmt.Sprintf("a%d %s", i, variant.typ))
					default:
						args = append(args, fmt.Sprintf("a%d %s", i, p))
					}
				}
				if variant.typ != "" && len(args) == 0 {
					args = []string{"a0 " + variant.typ}
				}
				if variant.extra != "" {
					args = append(args, variant.extra)
				}
				decl := fmt.Sprintf("%s.%s(%s)", schema, name, strings.Join(args, ", "))
				if _, err := conn.Exec(ctx, "CREATE FUNCTION "+decl+
					" RETURNS bigint LANGUAGE plpgsql AS $fn$ BEGIN INSERT INTO public.overloads_ran VALUES ('"+name+"'); RETURN 1; END $fn$"); err != nil {
					if strings.Contains(err.Error(), "already exists") {
						continue // another of sfgen's signatures for the name made the same one
					}
					t.Fatalf("%s: %v", decl, err)
				}
				planted = append(planted, name)
			}
			exec("RESET ROLE")
			// The overloads stay, their owner's CREATE goes: the refusal
			// must come from what is there.
			exec("REVOKE CREATE ON SCHEMA " + schema + " FROM " + mallory)
			for _, args := range [][]string{
				{"node", "--dsn", dsn, "--schema", schema},
				{"node", "--dsn", dsn, "--schema", schema, "--datacenter", "3", "--machine", "5"},
				{"node", "--dsn", dsn, "--dsn", dsn, "--schema", schema},
				{"verify", "--dsn", dsn, "--schema", schema},
				{"install", "--dsn", dsn, "--schema", schema},
				{"install", "--dsn", dsn, "--schema", schema, "--datacenter", "1", "--machine", "1"},
				{"next", "--dsn", dsn, "--schema", schema},
				{"bench", "--dsn", dsn, "--schema", schema, "--duration", "1s"},
			} {
				code, out, errOut := sfgen(t, args...)
				if code != exitFail || !strings.Contains(out+errOut, "owned by "+mallory) || !strings.Contains(out+errOut, "not trusted") {
					t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1 naming mallory's overloads", strings.Join(args[:1], " "), code, out, errOut)
				}
				// install refuses the schema itself, whichever generator:
				// not in the name of the native generator nobody asked for.
				if args[0] == "install" && strings.Contains(errOut, "native:") {
					t.Errorf("install %v: stderr %q blames the native generator", args[1:], errOut)
				}
			}
			var ran []string
			rows, _ := conn.Query(ctx, "SELECT fn FROM public.overloads_ran")
			if ran, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				t.Fatal(err)
			}
			if len(ran) > 0 || len(planted) < len(catalog.KnownFunctionNames) {
				t.Errorf("planted %d overloads; these ran: %v", len(planted), ran)
			}
		})
	}
}

// TestConcurrentFirstInstallsWithNodes replays issue 22's seventh
// attack: three first installs into one new schema at once, each asking
// for another node. One installs; the others exit 2 naming the node the
// schema has (before, all three exited 0 and two were told nothing).
// Each round's schema is in the same database, so each round asks for
// nodes of its own datacenter: a node belongs to one maker of the
// database (release 4's registry).
func TestConcurrentFirstInstallsWithNodes(t *testing.T) {
	dsn := pgtest.DSN(t)
	_, schema := testSchema(t, dsn)
	rounds := 3
	if testing.Short() {
		rounds = 1
	}
	for round := range rounds {
		schema := fmt.Sprintf("%s_%d", schema, round)
		dc := 2 + round
		type outcome struct {
			code        int
			out, errOut string
			machine     int
		}
		results := make(chan outcome, 3)
		start := make(chan struct{})
		for m := 1; m <= 3; m++ {
			go func() {
				<-start
				code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", schema, "--datacenter", fmt.Sprint(dc), "--machine", fmt.Sprint(m))
				results <- outcome{code, out, errOut, m}
			}()
		}
		close(start)
		var won []int
		var lost []outcome
		for range 3 {
			r := <-results
			switch r.code {
			case exitOK:
				won = append(won, r.machine)
			default:
				lost = append(lost, r)
			}
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d installs exited 0 (machines %v); want 1; the others: %+v", round, len(won), won, lost)
		}
		has := fmt.Sprintf("already has sfgen with node datacenter %d, machine %d, which install keeps", dc, won[0])
		for _, r := range lost {
			if r.code != exitUsage || !strings.Contains(r.errOut, has) {
				t.Errorf("round %d: install asking for machine %d: exit %d, stderr %q; want 2 saying %q", round, r.machine, r.code, r.errOut, has)
			}
		}
	}
}

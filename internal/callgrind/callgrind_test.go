package callgrind

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

var (
	full  = flag.Bool("callgrind", false, "count at 100,000 rows and print the report (some minutes)")
	rows  = flag.Int("callgrind-rows", 0, "rows per INSERT (default 100,000 with -callgrind, else 3,000)")
	setup listFlag
	other listFlag
)

func init() {
	flag.Var(&setup, "callgrind-setup", "an SQL statement to run in the counted database before its tables are made (CREATE EXTENSION ..., ALTER SYSTEM SET ...); repeatable")
	flag.Var(&other, "callgrind-compare", "another id default to count, as 'TYPE EXPR' (TYPE bigint or uuid: 'uuid pg_catalog.uuidv7()'); repeatable")
}

// listFlag holds a repeatable flag's values.
type listFlag []string

func (c *listFlag) String() string     { return strings.Join(*c, "; ") }
func (c *listFlag) Set(v string) error { *c = append(*c, v); return nil }

// TestInstructionsPerRow counts bigserial, sfgen's SQL generator and (where
// the server's headers are installed) its native one. Without -callgrind
// it counts 3,000 rows and checks the figures' shape; with it, 100,000,
// and prints the report:
//
//	go test ./internal/callgrind -run TestInstructionsPerRow -callgrind -v
func TestInstructionsPerRow(t *testing.T) {
	if testing.Short() && !*full {
		t.Skip("runs PostgreSQL under valgrind; not with -short")
	}
	ctx := context.Background()
	c, err := pgcluster.Start(ctx)
	if errors.Is(err, pgcluster.ErrNoServer) {
		t.Skipf("no server binaries: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	conn, err := pgx.Connect(ctx, c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE cg"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	cfg, err := pgx.ParseConfig(c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Database = "cg"
	conn, err = pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	script, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, string(script)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE public.t_plain (id bigint, c int);
		CREATE TABLE public.t_bigserial (id bigserial, c int);
		CREATE TABLE public.t_sql (id bigint DEFAULT public.snowflake_next_id(), c int)`); err != nil {
		t.Fatal(err)
	}
	tables := []Table{{Name: "t_bigserial", Default: "bigserial (nextval)"}, {Name: "t_sql", Default: "snowflake_next_id() (SQL)", FastPath: true, CatchUps: true}}
	for _, s := range setup {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("-callgrind-setup %q: %v", s, err)
		}
	}
	for i, c := range other {
		typ, expr, _ := strings.Cut(c, " ")
		name := fmt.Sprintf("t_compare%d", i+1)
		table := Table{Name: name, Default: expr}
		switch typ {
		case "bigint":
		case "uuid":
			// Over a uuid table given one constant id.
			table.Plain, table.PlainID = "t_plain_uuid", "'00000000-0000-0000-0000-000000000000'::pg_catalog.uuid"
			if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS public.t_plain_uuid (id uuid, c int)"); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("-callgrind-compare %q: want 'bigint EXPR' or 'uuid EXPR'", c)
		}
		// A test flag of the developer's, pasted as the flag says.
		if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLE public.%s (id %s DEFAULT %s, c int)", name, typ, expr)); err != nil {
			t.Fatalf("-callgrind-compare %q: %v", c, err)
		}
		tables = append(tables, table)
	}
	if so, err := buildNative(ctx, t, c); err != nil {
		t.Logf("no native generator counted: %v", err)
	} else if err := native.InstallSideBySide(ctx, conn, "public", so); err != nil {
		t.Logf("no native generator counted: %v", err)
	} else {
		if _, err := conn.Exec(ctx, `CREATE TABLE public.t_native (id bigint DEFAULT public.snowflake_next_id_native(), c int)`); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, Table{Name: "t_native", Default: "snowflake_next_id_native() (C)", FastPath: true})
	}
	conn.Close(ctx)

	n := *rows
	if n == 0 && !*full {
		n = 3000
	}
	start := time.Now()
	statements := 0 // Measure's 20,000
	if !*full {
		statements = 300
	}
	r, err := Measure(ctx, Options{Cluster: c, DB: "cg", Rows: n, Statements: statements, Plain: "t_plain", Tables: tables})
	if errors.Is(err, ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	r.WriteText(&b)
	t.Logf("%d runs in %v:\n%s", len(r.Runs), time.Since(start).Round(time.Second), b.String())
	// The shape: every default costs something; sfgen's fast path is
	// below its real-clock figure, which has catch-ups; libfaketime's
	// clock reads cost more than the real ones.
	if r.ClockOverhead <= 0 {
		t.Errorf("libfaketime's clock read costs %v instructions over a real one; want more", r.ClockOverhead)
	}
	for _, f := range r.Figures {
		if f.PerRow <= 0 {
			t.Errorf("%s: %v instructions per row", f.Default, f.PerRow)
		}
		// (The native generator's frozen-clock figure is not below its
		// real-clock one: 2,090 against 1,836 at 100,000 rows; not
		// explained yet, so not judged.)
		if strings.HasSuffix(f.Default, "(SQL)") && (f.FastPath <= 0 || f.FastPath >= f.PerRow || f.CatchUps == 0 || f.PerCatchUp <= 0) {
			t.Errorf("%s: %+v; want a fast path below the real-clock figure, which has catch-ups, and their cost", f.Default, f)
		}
		// A single-row INSERT sets up the default's expression each time.
		if strings.HasSuffix(f.Default, "(SQL)") && f.PerStatement <= f.FastPath {
			t.Errorf("%s: %.0f instructions per single-row statement, %.0f per row of one statement; want more per statement", f.Default, f.PerStatement, f.FastPath)
		}
		// A transaction of its own adds what the default costs once per
		// transaction: the SQL generator's two sequences' first access.
		if strings.HasSuffix(f.Default, "(SQL)") && f.PerAutocommit <= f.PerStatement {
			t.Errorf("%s: %.0f instructions per autocommit INSERT, %.0f per INSERT in one transaction; want more per autocommit INSERT", f.Default, f.PerAutocommit, f.PerStatement)
		}
	}
}

// buildNative builds the native generator where the server's headers are,
// into a directory the server's OS user may read.
func buildNative(ctx context.Context, t *testing.T, c *pgcluster.Cluster) (string, error) {
	pgConfig, err := native.FindPGConfig()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(c.Dir(), "native")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	return native.Build(ctx, dir, snowflake.Twitter(), native.WithPGConfig(pgConfig))
}

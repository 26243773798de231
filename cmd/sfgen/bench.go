package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/bench"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/native"
)

const benchHelp = `
sfgen bench [--dsn URL] [--schema NAME] [--layout NAME|SPEC] [--profile magnifying|realistic]
            [--clients N] [--duration D] [--rounds N] [--statement-rows N] [--statement-runs N]
            [--native] [--compare FUNC ...] [--json]

Measures INSERT throughput with DEFAULT snowflake_next_id() against
bigserial: N clients, each on its own connection, run single-row prepared
INSERTs into two scratch tables of the same shape, in alternating rounds
(bigserial, snowflake, snowflake, bigserial, ...; 200 ms each unless
--rounds says otherwise). It reports the rate of each, their ratio and how
much it varied from round to round, the WAL written per row and, where pg_walinspect is
installed, the WAL of sequence records per ID (the generator's own), the
bytes of each table's primary key index per row after the rounds, and how
far the time in each ID trails the row's clock_timestamp().

--profile sets the rows and their commit. magnifying (the default): rows
of (id, at timestamptz, client integer) with synchronous_commit=off, so
that the commit's flush does not hide the cost of the ID. realistic: rows
with a 100-byte text besides, an index on the time column besides the
primary key, and synchronous_commit=on: what an application's INSERT
pays for its ID.

Then it measures one statement: an INSERT ... SELECT of --statement-rows
rows (100,000 unless told; 0 skips it) into a fresh table of each shape,
--statement-runs times per variant (5 unless told), alternating, each
after a CHECKPOINT where the role may run one, and reports each variant's
microseconds per row (medians) and the difference, and the bytes per row
of its table's primary key index and of the WAL the statement wrote.

With no database (no --dsn and no $DATABASE_URL) it starts a throwaway
PostgreSQL from the local server binaries, installs sfgen into it for
--layout (Twitter's by default), measures and removes it. With one,
snowflake_next_id() must be installed in NAME (see 'sfgen install'), for
--layout if given (else for whatever layout NAME records); the scratch
tables are made in NAME and dropped at the end. Progress goes to stderr,
the report to stdout.

--native adds a third variant, the native (C) generator, on the same state
as the SQL one: without --dsn sfgen builds it and installs it in the
throwaway PostgreSQL as snowflake_next_id_native(), beside the SQL
snowflake_next_id() (it needs pg_config, the server's headers, make and a C
compiler). With --dsn on a schema where 'sfgen install --native' made
snowflake_next_id() the native generator, that is the native variant (with
or without --native), and the SQL variant is the SQL generator of this
sfgen's release written out as the column default (the body of its
snowflake_next_id(), on the schema's state); on a schema whose
snowflake_next_id() is the SQL one, --native needs a
snowflake_next_id_native() beside it. Rounds and statements then cycle
through every order of the three.

--compare FUNC (up to 4 times) adds another variant for each FUNC, any
function callable with no arguments (defaults allowed) that returns uuid,
such as PostgreSQL 18's uuidv7() or gen_random_uuid(), or a value that can
be the DEFAULT of a bigint column, such as pgEdge's snowflake.nextval():
its table gets id uuid (or bigint) PRIMARY KEY DEFAULT FUNC(), and it runs in the same
alternating rounds and statements as the others, with its own ratio to
bigserial. FUNC is name or schema.name, each part an identifier as
PostgreSQL reads it: unquoted (letters, digits, _ and $, not starting with
a digit; folded to lower case) or "double quoted" ("" for a quote); a
trailing () is allowed. The bench sessions' search_path is pg_catalog,
pg_temp, so an unqualified FUNC is found only there: qualify a function of
any other schema (public.f, not f).

It calls sfgen's functions as the role that owns them: connected as
another role, it runs as the owner (SET ROLE, said on stderr) where the
connecting role can act as it, and refuses otherwise (docs/security.md).

Examples:
  sfgen bench
  sfgen bench --clients 1 --duration 10s
  sfgen bench --duration 60s --rounds 120
  sfgen bench --dsn postgres://app@localhost/app --schema ids --json
  sfgen bench --layout discord --clients 4
  sfgen bench --duration 2s --statement-rows 1000000 --statement-runs 9
  sfgen bench --native --duration 20s --statement-runs 12
  sfgen bench --native --compare snowflake.nextval --dsn postgres://app@localhost/app --schema ids
  sfgen bench --compare public.my_next_id --compare '"Ids"."Next"' --dsn postgres://app@localhost/app
  sfgen bench --profile realistic --compare uuidv7 --compare gen_random_uuid
`

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("bench", benchHelp, stdout, stderr)
	dsnFlag := c.fs.String("dsn", "", dsnThrowawayHelp)
	fetchPG := c.fs.Bool("fetch-postgres", false, fetchHelp)
	schema := c.schemaVar("schema `NAME` that holds snowflake_next_id()")
	lf, code, done := c.layoutVar(args)
	if done {
		return code
	}
	clients := c.intVar("clients", "concurrent clients `N`", bench.DefaultClients, 1, bench.MaxClients)
	duration := c.fs.Duration("duration", bench.DefaultDuration, withRange("measured time `D` per variant, split into rounds", bench.FormatDuration(bench.MinRound), bench.FormatDuration(bench.MaxDuration)))
	rounds := c.intVar("rounds", fmt.Sprintf("rounds `N` per variant; 0: one per %v of --duration", bench.DefaultRound), 0, 0, bench.MaxRounds)
	statementRows := c.intVar("statement-rows", "rows `N` of the one-statement INSERT ... SELECT; 0 skips it", bench.DefaultStatementRows, 0, bench.MaxStatementRows)
	statementRuns := c.intVar("statement-runs", "runs `N` of the one-statement INSERT ... SELECT per variant", bench.DefaultStatementRuns, 1, bench.MaxStatementRuns)
	profile := c.fs.String("profile", bench.ProfileMagnifying, "the rows and their commit, `magnifying` (small rows, synchronous_commit=off) or realistic (a 100-byte text and an index on the time column besides, synchronous_commit=on)")
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	withNative := c.fs.Bool("native", false, "also measure the native generator (built and installed beside the SQL one in the throwaway PostgreSQL; with --dsn, the schema's own after sfgen install --native)")
	var compare stringsFlag
	c.fs.Var(&compare, "compare", fmt.Sprintf("also measure `FUNC`() as the DEFAULT of the id (uuid when it returns uuid, else bigint): name or schema.name (unqualified: pg_catalog and pg_temp only); up to %d times", bench.MaxCompare))
	if code, done := c.parseFlags(args); done {
		return code
	}
	cfg := bench.Config{
		Schema:   *schema,
		Clients:  clients.Int(),
		Duration: *duration,
		Rounds:   rounds.Int(),
		// 0 on the command line skips it; in a Config, 0 is the default.
		StatementRows: statementRows.Int(),
		StatementRuns: statementRuns.Int(),
		Progress:      prefixWriter{stderr, "sfgen bench: "},
		Native:        *withNative,
		Profile:       *profile,
		Compare:       compare,
	}
	if statementRows.Int() == 0 {
		cfg.StatementRows = -1
	}
	if err := cfg.Normalize(); err != nil {
		return c.usageError("%v", err)
	}

	// One connection for the steps before the bench itself; the bench
	// opens a pool of its own.
	var pre preConn
	defer pre.close()
	var nativeDir string
	if *withNative {
		dir, err := os.MkdirTemp("", "sfgen-bench-native-")
		if err != nil {
			return c.fail("%v", err)
		}
		nativeDir = dir
		defer os.RemoveAll(nativeDir)
	}
	// In the throwaway PostgreSQL: pg_walinspect, and with --native the
	// native generator built and installed beside the SQL one.
	prepare := func(ctx context.Context, dsn, schema string) error {
		conn, err := pre.get(ctx, dsn)
		if err != nil {
			return err
		}
		if err := createWalinspect(ctx, conn, dsn, schema); err != nil {
			return err
		}
		if *withNative {
			return installNativeBeside(ctx, conn, schema, lf.layout, nativeDir)
		}
		return nil
	}
	dsn, stop, code, ok := c.dsnOrThrowaway(ctx, *dsnFlag, *fetchPG, lf.layout, *schema, prepare)
	if !ok {
		return code
	}
	defer stop()
	if lf.set {
		conn, err := pre.get(ctx, dsn)
		if err != nil {
			return c.connectError(err)
		}
		if code, ok := c.checkLayout(ctx, conn, dsn, *schema, lf.layout); !ok {
			return code
		}
	}
	{
		conn, err := pre.get(ctx, dsn)
		if err != nil {
			return c.connectError(err)
		}
		if cfg.Role, err = ownerToActAs(ctx, catalog.PGX(conn), *schema); err != nil {
			return c.fail("%s", redactErr(err, dsn))
		}
		if cfg.Role != "" {
			c.actingAs(cfg.Role, *schema)
		}
	}
	pre.close()
	cfg.DSN = dsn
	res, err := bench.Run(ctx, cfg)
	if errors.Is(err, connect.ErrBadDSN) {
		return c.usageError("%v", err)
	}
	if err != nil {
		return c.fail("%s", redactErr(err, dsn))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return c.fail("%v", err)
		}
		return exitOK
	}
	if err := res.WriteText(stdout); err != nil {
		return c.fail("%v", err)
	}
	return exitOK
}

// createWalinspect creates pg_walinspect in a throwaway cluster's schema
// (search_path is pinned to pg_catalog, where CREATE EXTENSION would
// otherwise put it) so that the report can split out the sequences' WAL.
func createWalinspect(ctx context.Context, conn *pgx.Conn, dsn, schema string) error {
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect SCHEMA "+s.Quoted()); err != nil {
		return fmt.Errorf("create pg_walinspect: %s", redactErr(err, dsn))
	}
	return nil
}

// prefixWriter writes each Write (one line) with a prefix.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// checkLayout checks that schema in the database dsn (on conn) holds
// sfgen for layout l, when it holds sfgen at all (the caller says what a
// missing install means). When it does not, it has printed one line
// naming both layouts and returns exit status 1 with ok false.
func (c *cli) checkLayout(ctx context.Context, conn *pgx.Conn, dsn, schema string, l snowflake.Layout) (code int, ok bool) {
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		return c.usageError("%v", err), false
	}
	in, err := catalog.Inspect(ctx, catalog.PGX(conn), s)
	if err != nil {
		return c.fail("%s", redactErr(err, dsn)), false
	}
	if !in.Layout.IsZero() && in.Layout != l {
		return c.fail("schema %s was generated for layout %s, not --layout %s", schema, describeLayout(in.Layout), describeLayout(l)), false
	}
	return exitOK, true
}

// installNativeBeside builds the native generator for layout l in dir
// (made readable by the server's OS user) and installs it as
// snowflake_next_id_native() in schema, beside the SQL one, on conn.
func installNativeBeside(ctx context.Context, conn *pgx.Conn, schema string, l snowflake.Layout, dir string) error {
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	lib, err := native.Build(ctx, dir, l)
	if err != nil {
		return err
	}
	return native.InstallSideBySide(ctx, conn, schema, lib)
}

// A preConn is one connection to the database being benched, opened when
// first needed, for the steps before the bench itself (preparing a
// throwaway PostgreSQL, checking the layout).
type preConn struct{ conn *pgx.Conn }

// get returns the connection to dsn, opening it on the first call.
func (p *preConn) get(ctx context.Context, dsn string) (*pgx.Conn, error) {
	if p.conn == nil {
		conn, err := connect.Connect(ctx, dsn)
		if err != nil {
			return nil, err
		}
		p.conn = conn
	}
	return p.conn, nil
}

// close closes the connection, if open; it may be called again.
func (p *preConn) close() {
	if p.conn != nil {
		p.conn.Close(context.Background())
		p.conn = nil
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sfgen/sfgen/internal/bench"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

const benchHelp = `
sfgen bench [--dsn URL] [--schema NAME] [--clients N] [--duration D] [--rounds N] [--json]

Measures INSERT throughput with DEFAULT snowflake_next_id() against
bigserial: N clients, each on its own connection, run single-row prepared
INSERTs into two scratch tables of the same shape, in alternating rounds
(bigserial, snowflake, snowflake, bigserial, ...; 200 ms each unless
--rounds says otherwise). It reports the rate of each, their ratio and how
much it varied from round to round, the WAL written per row and, where pg_walinspect is
installed, the WAL of sequence records per ID (the generator's own), and how
far the time in each ID trails the row's clock_timestamp(). The sessions
run with synchronous_commit=off, so that the commit's flush does not hide
the cost of the ID.

With no database (no --dsn and no $DATABASE_URL) it starts a throwaway
PostgreSQL from the local server binaries, installs sfgen into it, measures
and removes it. With one, snowflake_next_id() must be installed in NAME
(see 'sfgen install'); the scratch tables are made in NAME and dropped at
the end. Progress goes to stderr, the report to stdout.

Examples:
  sfgen bench
  sfgen bench --clients 1 --duration 10s
  sfgen bench --duration 60s --rounds 120
  sfgen bench --dsn postgres://app@localhost/app --schema ids --json
`

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("bench", benchHelp, stdout, stderr)
	dsnFlag := c.fs.String("dsn", "", dsnHelp+"; none: a throwaway cluster")
	schema := c.fs.String("schema", sqlgen.DefaultSchema, "schema `NAME` that holds snowflake_next_id()")
	var clients intFlag
	clients.text = "8"
	c.fs.Var(&clients, "clients", fmt.Sprintf("concurrent clients `N`, 1 to %d", bench.MaxClients))
	duration := c.fs.Duration("duration", 20*time.Second, "measured time `D` per variant, split into rounds (at least 100ms)")
	var rounds intFlag
	rounds.text = "0"
	c.fs.Var(&rounds, "rounds", fmt.Sprintf("rounds `N` per variant, 1 to %d; 0: one per %v of --duration", bench.MaxRounds, bench.DefaultRound))
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	if code, done := c.parseFlags(args); done {
		return code
	}
	n, err := parseRange("clients", clients.text, 1, bench.MaxClients)
	if err != nil {
		return c.usageError("%v", err)
	}
	if *duration < 100*time.Millisecond || *duration > 24*time.Hour {
		return c.usageError("duration %v out of range [100ms, 24h]", *duration)
	}
	r, err := parseRange("rounds", rounds.text, 0, bench.MaxRounds)
	if err != nil {
		return c.usageError("%v", err)
	}
	cfg := bench.Config{
		Schema:   *schema,
		Clients:  n,
		Duration: *duration,
		Rounds:   r,
		Progress: prefixWriter{stderr, "sfgen bench: "},
	}
	if err := cfg.Normalize(); err != nil {
		return c.usageError("%v", err)
	}

	dsn := dsnOrEnv(*dsnFlag)
	if dsn == "" {
		fmt.Fprintf(stderr, "sfgen bench: no --dsn or $DATABASE_URL: starting a throwaway PostgreSQL\n")
		cl, err := pgcluster.Start(ctx)
		if err != nil {
			return c.fail("start a throwaway PostgreSQL: %v", err)
		}
		defer cl.Stop()
		dsn = cl.DSN()
		if err := installForBench(ctx, dsn, *schema); err != nil {
			return c.fail("install into the throwaway PostgreSQL: %v", err)
		}
	}
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

// installForBench installs sfgen's script into a throwaway cluster, with
// pg_walinspect (in the same schema: search_path is pinned to pg_catalog,
// where CREATE EXTENSION would otherwise put it) so that the report can
// split out the sequences' WAL.
func installForBench(ctx context.Context, dsn, schema string) error {
	script, err := sqlgen.Script(sqlgen.Options{Schema: schema})
	if err != nil {
		return err
	}
	conn, err := connect.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, string(script)); err != nil {
		return errors.New(redactErr(err, dsn))
	}
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect SCHEMA "+sqlgen.QuoteIdentifier(schema)); err != nil {
		return fmt.Errorf("create pg_walinspect: %s", redactErr(err, dsn))
	}
	return nil
}

// parseRange parses text as an integer in [lo, hi], with an error that
// names the field, the text and the range.
func parseRange(field, text string, lo, hi int64) (int, error) {
	var n int64
	if _, err := fmt.Sscan(text, &n); err != nil || fmt.Sprint(n) != text {
		return 0, fmt.Errorf("%s %q is not a whole number; want an integer in [%d, %d]", field, text, lo, hi)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%s %d out of range [%d, %d]", field, n, lo, hi)
	}
	return int(n), nil
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

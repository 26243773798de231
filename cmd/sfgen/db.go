package main

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/sfgen/sfgen/internal/snowflake"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// dsnHelp is the usage text of every --dsn flag.
const dsnHelp = "PostgreSQL connection `URL` (default $DATABASE_URL)"

// dsnOrEnv returns the --dsn value, or $DATABASE_URL when the flag is empty.
func dsnOrEnv(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return os.Getenv("DATABASE_URL")
}

// requireDB opens the database named by --dsn or $DATABASE_URL for a
// command that needs one. When it cannot, it has printed one line and
// returns the exit status with ok false: 2 when no database is named, 1
// when it cannot be reached.
func (c *cli) requireDB(ctx context.Context, dsnFlag string) (db *sql.DB, dsn string, code int, ok bool) {
	dsn = dsnOrEnv(dsnFlag)
	if dsn == "" {
		return nil, "", c.usageError("no database: give --dsn URL or set DATABASE_URL"), false
	}
	db, err := openDB(ctx, dsn)
	if err != nil {
		return nil, "", c.fail("connect: %s", err), false
	}
	return db, dsn, exitOK, true
}

// openDB opens and pings a database/sql handle over pgx. Its errors never
// contain the password.
func openDB(ctx context.Context, dsn string) (*sql.DB, error) {
	if _, err := pgconn.ParseConfig(dsn); err != nil {
		return nil, errors.New(redactErr(err, dsn))
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, errors.New(redactErr(err, dsn))
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, errors.New(redactErr(err, dsn))
	}
	return db, nil
}

// redactErr returns err's text on one line, with repeated lines (pgx
// reports each connection attempt) said once and dsn's password, if any,
// removed.
func redactErr(err error, dsn string) string {
	var lines []string
	seen := map[string]bool{}
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !seen[l] {
			seen[l] = true
			lines = append(lines, l)
		}
	}
	msg := strings.Join(lines, " ")
	for _, secret := range passwords(dsn) {
		msg = strings.ReplaceAll(msg, secret, "xxxxx")
	}
	return msg
}

// passwords finds the password in a URL or key=value connection string.
func passwords(dsn string) []string {
	var out []string
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			out = append(out, p, url.QueryEscape(p), url.PathEscape(p))
		}
		if p := u.Query().Get("password"); p != "" {
			out = append(out, p)
		}
	}
	if cfg, err := pgconn.ParseConfig(dsn); err == nil && cfg.Password != "" {
		out = append(out, cfg.Password)
	}
	return out
}

// sqlFlags are the flags that choose what SQL to render: schema and node.
type sqlFlags struct {
	schema      string
	dc, machine intFlag
}

func (f *sqlFlags) register(c *cli) {
	c.fs.StringVar(&f.schema, "schema", sqlgen.DefaultSchema, "install into schema `NAME` (created if missing)")
	c.fs.Var(&f.dc, "datacenter", "datacenter `N` (0 to 31) that snowflake_next_id() uses until `sfgen node` changes it")
	c.fs.Var(&f.machine, "machine", "machine `N` (0 to 31) that snowflake_next_id() uses until `sfgen node` changes it")
}

// options validates the flags and returns the sqlgen options they mean.
func (f *sqlFlags) options() (sqlgen.Options, error) {
	o := sqlgen.Options{Layout: snowflake.Twitter, Schema: f.schema}
	if err := sqlgen.ValidateSchema(f.schema); err != nil {
		return o, err
	}
	var err error
	if f.dc.set {
		if o.Datacenter, err = f.dc.node(o.Layout, snowflake.FieldDatacenter); err != nil {
			return o, err
		}
	}
	if f.machine.set {
		if o.Machine, err = f.machine.node(o.Layout, snowflake.FieldMachine); err != nil {
			return o, err
		}
	}
	return o, nil
}

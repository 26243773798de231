// Package connect opens sfgen's own connections to PostgreSQL: a pinned
// search_path, a connect timeout, and errors that never show a password.
//
// Every connection it opens starts with search_path set to [SearchPath]
// as a startup parameter, so that from the first query on no unqualified
// name (sfgen's, goose's or pgx's) can resolve to a look-alike that some
// other role created in a schema such as public. A startup parameter
// outranks ALTER DATABASE ... SET and ALTER ROLE ... SET, and a
// search_path in the connection string itself.
//
// Every connection attempt gives up after the connection string's
// connect_timeout, or [DefaultConnectTimeout] when it sets none, so that a
// server that accepts TCP and never answers cannot hang sfgen.
//
// No error from this package contains the connection string or the
// password in it: a string that cannot be parsed gets a [*ParseError],
// which says what is wrong without quoting any of it, and every later
// error has the parsed password removed (see [Redact]).
package connect

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sfgen/sfgen/internal/pgident"
)

// SearchPath is the search_path of every connection this package opens:
// the built-in catalog only, and the session's temporary schema last
// (which is never searched for functions or operators).
const SearchPath = "pg_catalog, pg_temp"

// DefaultConnectTimeout bounds each connection attempt when the
// connection string sets no connect_timeout (or sets 0, which would wait
// forever).
const DefaultConnectTimeout = 10 * time.Second

// ErrBadDSN is matched, with errors.Is, by the error for a connection
// string that cannot be parsed.
var ErrBadDSN = errors.New("cannot parse the connection string")

// A ParseError says why a connection string cannot be parsed. Its text
// never contains any part of the string.
type ParseError struct {
	Form   string // "URL" or "keyword/value", the form the string was read as
	Reason string // what is wrong, in words that quote nothing from the string
}

// Error returns "cannot parse the connection string (FORM form): REASON".
func (e *ParseError) Error() string {
	return ErrBadDSN.Error() + " (" + e.Form + " form): " + e.Reason
}

// Is reports whether target is ErrBadDSN.
func (e *ParseError) Is(target error) bool { return target == ErrBadDSN }

// Config parses dsn, a URL or keyword/value connection string, into a
// pgx configuration with search_path pinned to SearchPath and a connect
// timeout. A dsn that cannot be parsed gives a *ParseError.
func Config(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, parseError(dsn, err)
	}
	harden(&cfg.Config)
	return cfg, nil
}

// PoolConfig is Config for a pgxpool, which also reads the pool_*
// settings of dsn.
func PoolConfig(dsn string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, parseError(dsn, err)
	}
	harden(&cfg.ConnConfig.Config)
	return cfg, nil
}

// harden pins search_path and sets the default connect timeout. The
// fallback configurations (other hosts, or plain text after TLS) share
// RuntimeParams and ConnectTimeout with cfg.
func harden(cfg *pgconn.Config) {
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["search_path"] = SearchPath
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
}

// OpenDB opens a database/sql handle over pgx on dsn and pings it. Its
// errors are on one line and never contain the password.
func OpenDB(ctx context.Context, dsn string) (*sql.DB, error) {
	cfg, err := Config(dsn)
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDB(*cfg)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, redacted(err, dsn)
	}
	return db, nil
}

// AtAddress returns a copy of cfg that connects to host and port instead,
// with cfg's user, password, database and settings: another node of a
// cluster that cfg's server lists (Citus' workers). TLS verifies host
// where it verified cfg's, and cfg's other hosts are dropped.
func AtAddress(cfg *pgx.ConnConfig, host string, port int) *pgx.ConnConfig {
	out := cfg.Copy()
	if out.TLSConfig != nil && out.TLSConfig.ServerName == cfg.Host {
		out.TLSConfig.ServerName = host
	}
	out.Host, out.Port, out.Fallbacks = host, uint16(port), nil
	return out
}

// CitusNodeLocal returns a copy of cfg whose sessions have Citus' DDL
// propagation off (citus.enable_ddl_propagation, a startup setting): what
// they create or replace stays on the node they connect to, where Citus
// would otherwise copy it to every node (and a worker refuse it). Only
// for a server with Citus loaded, which defines the setting.
func CitusNodeLocal(cfg *pgx.ConnConfig) *pgx.ConnConfig {
	out := cfg.Copy()
	params := make(map[string]string, len(out.RuntimeParams)+1)
	for k, v := range out.RuntimeParams {
		params[k] = v
	}
	params["citus.enable_ddl_propagation"] = "off"
	out.RuntimeParams = params // fallbacks (other hosts, TLS) use cfg's settings
	return out
}

// ConnectConfig is Connect with a configuration of Config's, dsn the one
// it came from, whose password errors leave out.
func ConnectConfig(ctx context.Context, cfg *pgx.ConnConfig, dsn string) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, redacted(err, dsn)
	}
	return conn, nil
}

// OpenDBConfig is OpenDB with a configuration of Config's (as AtAddress
// returns), dsn the one it came from, whose password errors leave out.
func OpenDBConfig(ctx context.Context, cfg *pgx.ConnConfig, dsn string) (*sql.DB, error) {
	db := stdlib.OpenDB(*cfg)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, redacted(err, dsn)
	}
	return db, nil
}

// OpenDBAs is OpenDB with every session acting as role (SET ROLE): for
// a command that calls functions role owns, so that their code runs with
// no privileges role lacks.
func OpenDBAs(ctx context.Context, dsn, role string) (*sql.DB, error) {
	cfg, err := Config(dsn)
	if err != nil {
		return nil, err
	}
	setRole := "SET ROLE " + pgident.Quote(role)
	db := stdlib.OpenDB(*cfg, stdlib.OptionAfterConnect(func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, setRole)
		return err
	}))
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, redacted(err, dsn)
	}
	return db, nil
}

// OpenPool opens a pgxpool on dsn and pings it. Its errors are on one
// line and never contain the password.
func OpenPool(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	cfg, err := PoolConfig(dsn)
	if err != nil {
		return nil, err
	}
	return NewPool(ctx, cfg, dsn)
}

// NewPool opens a pool from cfg, which came from PoolConfig(dsn) and may
// have been changed since, and pings it. Its errors are on one line and
// never contain the password.
func NewPool(ctx context.Context, cfg *pgxpool.Config, dsn string) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, redacted(err, dsn)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, redacted(err, dsn)
	}
	return pool, nil
}

// Connect opens one pgx connection on dsn. Its errors are on one line and
// never contain the password.
func Connect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cfg, err := Config(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, redacted(err, dsn)
	}
	return conn, nil
}

// redactedError is an error whose text has been redacted. It does not
// unwrap, so that nothing can reach the original text, but errors.Is
// still sees through it (to context.DeadlineExceeded, say).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string        { return e.msg }
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }

// redacted returns err with Redact's text. A *ParseError is returned as it
// is: it holds nothing to redact.
func redacted(err error, dsn string) error {
	var pe *ParseError
	if errors.As(err, &pe) {
		return err
	}
	return &redactedError{msg: Redact(err, dsn), err: err}
}

// Redact returns err's text on one line, with repeated lines (pgx reports
// each connection attempt on its own) said once, and the password of dsn
// (as parsed, so one from PGPASSWORD or a password file too, and as the
// URL spells it) replaced by xxxxx where it stands as a password: a URL's
// (":PASSWORD@") and a password keyword's or query parameter's value
// ("password=PASSWORD", quoted or not). Elsewhere the same letters are
// left alone: a password "app" must not turn database "nosuchapp" into
// "nosuchxxxxx". It returns "" for a nil err.
func Redact(err error, dsn string) string {
	if err == nil {
		return ""
	}
	var lines []string
	seen := map[string]bool{}
	for _, l := range strings.Split(leadingCause(err), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !seen[l] {
			seen[l] = true
			lines = append(lines, l)
		}
	}
	msg := strings.Join(lines, " ")
	for _, secret := range passwords(dsn) {
		msg = redactPassword(msg, secret)
	}
	return msg
}

// redactPassword replaces secret in msg where it stands as a password.
func redactPassword(msg, secret string) string {
	q := regexp.QuoteMeta(secret)
	msg = regexp.MustCompile(`:`+q+`@`).ReplaceAllLiteralString(msg, ":xxxxx@")
	return regexp.MustCompile(`(?i)(password\s*=\s*'?)`+q+`(['&\s"`+"`"+`]|$)`).ReplaceAllString(msg, "${1}xxxxx${2}")
}

// leadingCause returns err's text, except for a connection that pgx tried
// more than once (sslmode=prefer tries TLS, then plain text; a host name
// may have several addresses) where one attempt reached the server and
// got its answer (a *pgconn.PgError: no such database, a wrong password):
// then pgx's prefix and that attempt's text alone, so that the cause
// leads, not "tls error: server refused TLS connection".
func leadingCause(err error) string {
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) {
		return err.Error()
	}
	attempts, ok := errors.Unwrap(ce).(interface{ Unwrap() []error })
	if !ok {
		return err.Error()
	}
	for _, a := range slices.Backward(attempts.Unwrap()) {
		var pe *pgconn.PgError
		if errors.As(a, &pe) {
			return fmt.Sprintf("failed to connect to `user=%s database=%s`: %v", ce.Config.User, ce.Config.Database, a)
		}
	}
	return err.Error()
}

// passwords returns the spellings of dsn's password that an error could
// show, longest first so that none is left half replaced.
func passwords(dsn string) []string {
	var out []string
	add := func(p string) {
		if p == "" {
			return
		}
		// As parsed, as a URL escapes it, and as a quoted keyword value
		// escapes it.
		out = append(out, p, url.QueryEscape(p), url.PathEscape(p), strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(p))
	}
	if cfg, err := pgconn.ParseConfig(dsn); err == nil {
		add(cfg.Password)
	}
	if u, err := url.Parse(dsn); err == nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		add(u.Query().Get("password"))
	}
	// Longest first: a password that contains another spelling of itself
	// (a%20b contains a) is replaced whole.
	slices.SortFunc(out, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(out)
}

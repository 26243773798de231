// Package install applies sfgen's release line of goose migrations to a
// PostgreSQL schema through goose's Provider over pgx, recording them in
// sfgen's own version table so that they never mix with the application's
// goose_db_version.
//
// Apply refuses, before it changes anything, a schema where objects under
// sfgen's names belong to another role or were not made by sfgen, a schema
// another role owns, an install of another layout and one of a newer
// release. Concurrent calls take turns; a failed first install leaves the
// database as it was.
//
// Run is the whole of `sfgen install` around Apply: the generator switch
// (the native generator built, loaded and installed, or the SQL one put
// back), planned and checked before Apply changes anything and carried
// out after it, and the check that an install keeps a schema's node.
//
// PlanMigrations is the same install written as goose migrations into an
// application's directory (`sfgen migration`): from the sfgen migrations
// already there it plans the first install or the upgrades the directory
// lacks, then the native switch (or the switch back) asked for, as files
// and notes in order; a MigrationWriter writes them, whole and a version
// apart.
package install

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlstate"
)

// VersionTable is the table, in the target schema, where sfgen's goose
// migrations are recorded.
const VersionTable = catalog.VersionTable

const (
	// gooseLockID is the advisory lock goose holds while it migrates: the
	// first 8 bytes of "sfgen\x00\x00\x01" read as a big-endian integer.
	gooseLockID int64 = 0x736667656e000001
	// applyLockID serialises whole Apply calls (checks, schema, goose and
	// the undo of a failed first install); goose's lock, on another
	// session, covers the migrations only.
	applyLockID int64 = 0x736667656e000002
)

// LockWait is how long Apply waits for another install to finish before
// it gives up with ErrLocked.
var LockWait = 30 * time.Second

// Errors Apply returns, wrapped with what it found.
var (
	// ErrForeignObject: the schema has objects under sfgen's names that
	// another role owns or that sfgen did not create.
	ErrForeignObject = sqlstate.ErrForeignObject
	// ErrLayoutMismatch: the schema holds sfgen's functions for another layout.
	ErrLayoutMismatch = sqlstate.ErrLayoutMismatch
	// ErrNewerRelease: the schema is at a release newer than this sfgen's.
	ErrNewerRelease = sqlstate.ErrNewerRelease
	// ErrUntrustedSchema: the schema belongs to a role that could drop or
	// replace sfgen's objects, or roles other than the installing one
	// (and superusers) can create objects in it (catalog.ErrUntrusted).
	ErrUntrustedSchema = sqlstate.ErrUntrustedSchema
	// ErrPrivilege: the installing role lacks a privilege the install
	// needs (from release 4, CREATE on the database for the private
	// schema of the leases, unless it exists).
	ErrPrivilege = sqlstate.ErrPrivilege
	// ErrLocked: another session held the install lock for LockWait.
	ErrLocked = errors.New("another install is running")
	// ErrBeforeEpoch: the database's clock is before the layout's epoch,
	// where release 2's snowflake_next_id() would make negative IDs.
	ErrBeforeEpoch = errors.New("database clock before the layout's epoch")
)

// PreflightSentinel returns the error of Apply's for a SQLSTATE that
// sfgen's preflight raises (SF101 to SF106), nil for any other: the
// sentinel of internal/sqlstate's table.
func PreflightSentinel(code string) error { return sqlstate.Preflight(code) }

// A Result tells what Apply did.
type Result struct {
	Schema  string   // the schema installed into
	Applied []string // migration files applied by this call, in order
	Version int64    // the schema's sfgen version (= release) after the call
}

// Apply brings the schema in o up to sfgen's latest release. Running it
// again applies nothing. Each migration runs in its own transaction, so a
// failed migration leaves no part of itself behind; when the first install
// into a database fails, Apply also removes the version table, and the
// schema if it created it, so the database is as it was.
//
// Every session Apply and goose use resolves names in pg_catalog only
// (search_path pg_catalog, pg_temp), whatever db's connections default to.
func Apply(ctx context.Context, db *sql.DB, o sqlgen.Options) (*Result, error) {
	return apply(ctx, db, o, nil)
}

// apply is Apply; with node not nil, it also refuses, under its lock, a
// schema that has sfgen with another node than node asks for (keptNode),
// so that of concurrent first installs asking for different nodes only
// the first installs and the others are told which node the schema has.
func apply(ctx context.Context, db *sql.DB, o sqlgen.Options, node *Node) (*Result, error) {
	schema, err := catalog.ParseSchema(o.Schema)
	if err != nil {
		return nil, err
	}
	o.Schema = schema.Name()
	fsys, err := FS(o)
	if err != nil {
		return nil, err
	}
	preflight, err := sqlgen.Preflight(o)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	restore, err := pinSearchPath(ctx, conn)
	if err != nil {
		return nil, err
	}
	defer restore()
	if err := checkServer(ctx, conn); err != nil {
		return nil, err
	}
	if err := checkClock(ctx, conn, o.Layout); err != nil {
		return nil, err
	}
	if err := advisoryLock(ctx, conn, applyLockID, LockWait); err != nil {
		return nil, err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_catalog.pg_advisory_unlock($1)", applyLockID)

	in, err := trusted(ctx, conn, schema)
	if err != nil {
		return nil, err
	}
	if err := check(ctx, conn, schema.Name(), string(preflight)); err != nil {
		return nil, err
	}
	if node != nil {
		if err := keptNode(in, node); err != nil {
			return nil, err
		}
	}
	var schemaExisted, tableExisted bool
	err = conn.QueryRowContext(ctx, `SELECT
		EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname OPERATOR(pg_catalog.=) $1),
		pg_catalog.to_regclass(pg_catalog.quote_ident($1) OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) $2) IS NOT NULL`,
		schema.Name(), VersionTable).Scan(&schemaExisted, &tableExisted)
	if err != nil {
		return nil, fmt.Errorf("inspect database: %w", err)
	}
	if !schemaExisted {
		if _, err := conn.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+schema.Quoted()); err != nil {
			return nil, fmt.Errorf("create schema %s: %w", schema, err)
		}
	}
	if err := versionTable(ctx, conn, schema); err != nil {
		if !tableExisted {
			undo(conn, schema, !schemaExisted)
		}
		return nil, err
	}
	if !tableExisted {
		// Installed by another route (the plain script, or goose in the
		// application's own table): record the releases it has, so that
		// goose does not run release 1's file over a later release.
		if err := adopt(ctx, conn, db, fsys, schema, in); err != nil {
			undo(conn, schema, !schemaExisted)
			return nil, err
		}
	} else if err := adoptEmpty(ctx, conn, db, fsys, schema, in); err != nil {
		return nil, err
	}
	// in, read under the lock, still holds: since, only the schema (if it
	// was missing) and the version table were made.
	if in.Release == 0 {
		// The release line starts with release 1, which sets a node (0/0,
		// or the one asked for) where there is none, unchecked: first give
		// the schema the node the latest release's first install would
		// (the one asked for, else the session's settings, or none), so
		// that no moment passes with a node nobody chose, and so that the
		// node registry (release 4) refuses one another maker of the
		// database holds (SF204).
		if err := firstNode(ctx, conn, o); err != nil {
			if !tableExisted {
				undo(conn, schema, !schemaExisted)
			}
			return nil, err
		}
	}
	var restale func()
	if in.Release == sqlgen.Latest && len(in.Stale) == 0 {
		// A copy made without the rows of sfgen's tables (pg_dump
		// --schema-only) holds the latest release without the catch-up's
		// turns: run the latest file again, which restores them.
		missing, err := turnsMissing(ctx, conn, schema)
		if err != nil {
			return nil, err
		}
		if missing {
			if restale, err = forget(ctx, conn, schema, in.Release); err != nil {
				return nil, err
			}
		}
	}
	if tableExisted && len(in.Stale) > 0 && in.Release <= sqlgen.Latest {
		// An older release's plain script ran over release N, recorded
		// in the version table: take N's record out, so that goose runs
		// N's own file again, whose check counts the mix as release 1 and
		// puts N back (as adopt does for a schema without the table).
		// Should that fail, the record goes back.
		if restale, err = forget(ctx, conn, schema, in.Release); err != nil {
			return nil, err
		}
	}
	res, err := upHook(ctx, db, fsys, schema)
	if err != nil && !tableExisted {
		undo(conn, schema, !schemaExisted)
	}
	if err != nil && restale != nil {
		restale()
	}
	return res, err
}

// turnsMissing reports whether the catch-up's turn table (release 7 on)
// lacks rows, as in a copy made without its data.
func turnsMissing(ctx context.Context, conn *sql.Conn, schema catalog.Schema) (bool, error) {
	n, exists, err := catalog.TurnRows(ctx, catalog.DB(conn), schema)
	return exists && n < sqlgen.CatchUpTurns, err
}

// forget deletes the version table's rows of release and later, and
// returns a function that puts them back.
func forget(ctx context.Context, conn *sql.Conn, schema catalog.Schema, release int) (func(), error) {
	table := schema.Quoted() + "." + VersionTable
	rows, err := conn.QueryContext(ctx, "DELETE FROM "+table+" WHERE version_id OPERATOR(pg_catalog.>=) $1::bigint RETURNING version_id, is_applied, tstamp", release)
	if err != nil {
		return nil, fmt.Errorf("take release %d out of %s: %w", release, table, err)
	}
	type row struct {
		version int64
		applied bool
		at      sql.NullTime
	}
	var gone []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.version, &r.applied, &r.at); err != nil {
			rows.Close()
			return nil, fmt.Errorf("take release %d out of %s: %w", release, table, err)
		}
		gone = append(gone, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("take release %d out of %s: %w", release, table, err)
	}
	return func() {
		for _, r := range gone {
			conn.ExecContext(context.WithoutCancel(ctx), "INSERT INTO "+table+" (version_id, is_applied, tstamp) VALUES ($1::bigint, $2::boolean, $3::timestamp)", r.version, r.applied, r.at)
		}
	}, nil
}

// upHook is up; tests replace it to fail where nothing else can.
var upHook = up

// firstNode gives a schema that the release line is about to install
// into for the first time sqlgen.FirstNode's node.
func firstNode(ctx context.Context, conn *sql.Conn, o sqlgen.Options) error {
	script, err := sqlgen.FirstNode(o)
	if err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("set the first node: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, string(script)); err != nil {
		return fmt.Errorf("set the first node: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("set the first node: %w", err)
	}
	return nil
}

// adopt records, in a new version table, the releases of an install made
// by another route, as goose would have recorded them: versions 1 to the
// release the schema is at. A schema whose functions are a mix of
// releases (an older script run over release N) is recorded at N-1, so
// that release N's own file runs again: its check counts the mix as
// release 1 and upgrades it from there. in is what the schema holds.
func adopt(ctx context.Context, conn *sql.Conn, db *sql.DB, fsys fs.FS, schema catalog.Schema, in catalog.Installed) error {
	release := in.Effective()
	if release == 0 {
		return nil
	}
	if len(in.Stale) > 0 && in.Release <= sqlgen.Latest {
		// An older script over release N: record up to N-1, so that goose
		// runs release N's own file, whose check counts the mix as release
		// 1 and which puts N back. (Recording 1 only would make goose run
		// release 2's frozen file, which refuses a schema that says it is
		// at a later release.)
		release = in.Release - 1
	}
	p, err := newProvider(db, fsys, schema)
	if err != nil {
		return err
	}
	if _, err := p.GetDBVersion(ctx); err != nil { // creates the version table
		return fmt.Errorf("create %s.%s: %w", schema, VersionTable, err)
	}
	for v := 1; v <= min(release, sqlgen.Latest); v++ {
		if _, err := conn.ExecContext(ctx, "INSERT INTO "+schema.Quoted()+"."+VersionTable+" (version_id, is_applied) VALUES ($1, true)", v); err != nil {
			return fmt.Errorf("record release %d in %s.%s: %w", v, schema, VersionTable, err)
		}
	}
	return nil
}

// adoptEmpty records, in a version table that exists without a row (a
// copy made without its rows, such as pg_dump --schema-only restores),
// goose's version 0 and the releases the schema holds, as adopt does for
// a schema without the table: goose refuses a table without version 0.
func adoptEmpty(ctx context.Context, conn *sql.Conn, db *sql.DB, fsys fs.FS, schema catalog.Schema, in catalog.Installed) error {
	table := schema.Quoted() + "." + VersionTable
	var empty bool
	if err := conn.QueryRowContext(ctx, "SELECT NOT EXISTS (SELECT FROM "+table+")").Scan(&empty); err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	if !empty {
		return nil
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO "+table+" (version_id, is_applied) VALUES (0, true)"); err != nil {
		return fmt.Errorf("record version 0 in %s, which has no rows: %w", table, err)
	}
	return adopt(ctx, conn, db, fsys, schema, in)
}

// trusted refuses a schema that another role could put objects in, or
// has: sfgen's install, and every later call of its functions, would be
// at the mercy of that role's overloads and look-alikes. It returns what
// the schema holds.
func trusted(ctx context.Context, conn *sql.Conn, schema catalog.Schema) (catalog.Installed, error) {
	in, err := catalog.Inspect(ctx, catalog.DB(conn), schema)
	return in, untrustedCheck(schema.Name(), err)
}

// untrustedCheck turns an *catalog.UntrustedError in err into the
// CheckError of the install's trust check (ErrForeignObject or
// ErrUntrustedSchema); any other err it returns as it is.
func untrustedCheck(schema string, err error) error {
	var ue *catalog.UntrustedError
	if !errors.As(err, &ue) {
		return err
	}
	sentinel := ErrForeignObject
	if len(ue.Foreign) == 0 {
		sentinel = ErrUntrustedSchema
	}
	return &CheckError{Schema: schema, Message: ue.Error(), err: sentinel}
}

// check runs the preflight in a transaction it rolls back.
func check(ctx context.Context, conn *sql.Conn, schema, preflight string) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("check schema %s: %w", schema, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, preflight); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && sqlstate.Preflight(pe.Code) != nil {
			return &CheckError{Schema: schema, Message: pe.Message, err: sqlstate.Preflight(pe.Code)}
		}
		return fmt.Errorf("check schema %s: %w", schema, err)
	}
	return nil
}

// A CheckError is a schema that Apply refuses to install into, with the
// database's one-line reason. It wraps one of ErrForeignObject,
// ErrLayoutMismatch, ErrNewerRelease, ErrUntrustedSchema and ErrPrivilege.
type CheckError struct {
	Schema  string
	Message string
	err     error
}

func (e *CheckError) Error() string { return strings.TrimPrefix(e.Message, "sfgen: ") }

// Unwrap returns the sentinel that says which check failed.
func (e *CheckError) Unwrap() error { return e.err }

func up(ctx context.Context, db *sql.DB, fsys fs.FS, schema catalog.Schema) (*Result, error) {
	p, err := newProvider(db, fsys, schema)
	if err != nil {
		return nil, err
	}
	// No p.Close(): it would close db, which belongs to the caller.
	results, err := p.Up(ctx)
	res := &Result{Schema: schema.Name()}
	for _, r := range results {
		if r.Error == nil {
			res.Applied = append(res.Applied, r.Source.Path)
		}
	}
	if err != nil {
		var pe *goose.PartialError
		if errors.As(err, &pe) && pe.Failed != nil {
			return res, fmt.Errorf("apply %s: %w", pe.Failed.Source.Path, pe.Err)
		}
		return res, fmt.Errorf("apply migrations: %w", err)
	}
	if res.Version, err = p.GetDBVersion(ctx); err != nil {
		return res, fmt.Errorf("read version: %w", err)
	}
	return res, nil
}

func newProvider(db *sql.DB, fsys fs.FS, schema catalog.Schema) (*goose.Provider, error) {
	// goose writes the table name into its SQL unquoted; a catalog.Schema
	// is a name that needs no quotes.
	return goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithTableName(schema.Name()+"."+VersionTable),
		goose.WithSessionLocker(newPinnedLocker(gooseLockID)),
		goose.WithDisableGlobalRegistry(true),
	)
}

// pinnedLocker is goose's session locker with every call bound to
// pg_catalog. goose runs the migrations on the session it locks, so it
// also pins that session's search_path while it holds the lock (goose's
// own queries name pg_tables, now() and its version table unqualified),
// and gives the session its search_path back when it unlocks.
type pinnedLocker struct {
	id      int64
	restore *func()
}

func newPinnedLocker(id int64) pinnedLocker { return pinnedLocker{id: id, restore: new(func())} }

func (l pinnedLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	restore, err := pinSearchPath(ctx, conn)
	if err != nil {
		return err
	}
	if err := advisoryLock(ctx, conn, l.id, LockWait); err != nil {
		restore()
		return err
	}
	*l.restore = restore
	return nil
}

func (l pinnedLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, "SELECT pg_catalog.pg_advisory_unlock($1)", l.id)
	if *l.restore != nil {
		(*l.restore)()
		*l.restore = nil
	}
	return err
}

// pinSearchPath sets conn's search_path to pg_catalog, pg_temp for the
// session and returns a function that sets it back, so that a session
// returned to the caller's pool is as it was.
func pinSearchPath(ctx context.Context, conn *sql.Conn) (restore func(), err error) {
	var saved string
	if err := conn.QueryRowContext(ctx, "SELECT pg_catalog.current_setting('search_path'), pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false)").Scan(&saved, new(string)); err != nil {
		return nil, fmt.Errorf("pin search_path: %w", err)
	}
	return func() {
		conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_catalog.set_config('search_path', $1, false)", saved)
	}, nil
}

// checkClock refuses a layout whose epoch the database's clock has not
// reached: release 2's fast path hands out the state unchecked, and before
// the epoch that state is below the first ID, so the IDs would be
// negative.
func checkClock(ctx context.Context, conn *sql.Conn, l snowflake.Layout) error {
	var now int64
	if err := conn.QueryRowContext(ctx, "SELECT pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8").Scan(&now); err != nil {
		return fmt.Errorf("read the database's clock: %w", err)
	}
	if now < l.Epoch() {
		return fmt.Errorf("%w: the database's clock says %s, before the epoch of layout %s (%s); sfgen's SQL would make negative IDs until then",
			ErrBeforeEpoch, time.UnixMilli(now).UTC().Format("2006-01-02T15:04:05.000Z"), l, l.MinTime().Format("2006-01-02T15:04:05.000Z"))
	}
	return nil
}

// advisoryLock takes a session-level advisory lock, trying every 50 ms
// for at most wait, and names the sessions holding it when it gives up.
func advisoryLock(ctx context.Context, conn *sql.Conn, id int64, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		var ok bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_catalog.pg_try_advisory_lock($1::bigint)", id).Scan(&ok); err != nil {
			return fmt.Errorf("take the install lock: %w", err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			var holders sql.NullString
			conn.QueryRowContext(ctx, `SELECT pg_catalog.string_agg(pg_catalog.format('pid %s (role %s)', l.pid, a.usename), ', ')
				FROM pg_catalog.pg_locks l LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) l.pid
				WHERE l.locktype OPERATOR(pg_catalog.=) 'advisory' AND l.granted
				AND l.classid OPERATOR(pg_catalog.=) (($1::bigint OPERATOR(pg_catalog.>>) 32)::pg_catalog.oid)
				AND l.objid OPERATOR(pg_catalog.=) (($1::bigint OPERATOR(pg_catalog.&) 4294967295)::pg_catalog.oid)`, id).Scan(&holders)
			if !holders.Valid {
				holders.String = "another session"
			}
			return fmt.Errorf("sfgen's install lock is held by %s for more than %v: %w", holders.String, wait, ErrLocked)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// undo removes what a failed first install left: the version table, the
// node firstNode made when no release was applied, and the schema when
// Apply created it and nothing else is in it. It runs
// under Apply's lock, so it never removes what another install made.
func undo(conn *sql.Conn, schema catalog.Schema, dropSchema bool) {
	ctx := context.Background() // the caller's context may be what failed
	q := schema.Quoted()
	conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+q+"."+VersionTable)
	// The node firstNode made, if no release got as far as
	// snowflake_layout(): alone, it is no install.
	var bare bool
	if conn.QueryRowContext(ctx, `SELECT pg_catalog.to_regprocedure($1) IS NULL AND pg_catalog.to_regprocedure($2) IS NOT NULL`,
		q+".snowflake_layout()", q+".snowflake_node_bits()").Scan(&bare) == nil && bare {
		conn.ExecContext(ctx, "DROP FUNCTION IF EXISTS "+q+".snowflake_node_bits()")
		conn.ExecContext(ctx, "DROP MATERIALIZED VIEW IF EXISTS "+q+"."+catalog.CitusFence)
	}
	if dropSchema {
		conn.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+q) // RESTRICT: only if empty
	}
}

// release is Run but the generator: the check that an install keeps a
// schema's node, Apply, and whether the schema has a node after it.
func release(ctx context.Context, db *sql.DB, o Options) (*Report, error) {
	copies, err := citusCopies(ctx, db, o.SQL.Schema)
	if err != nil {
		return nil, err
	}
	var repair *CitusRepair
	if len(copies) > 0 {
		if repair, err = setCopiedNode(ctx, db, o.SQL.Schema, copies, o.Node); err != nil {
			return nil, err
		}
	}
	if o.Node != nil {
		if err := nodeKept(ctx, db, o.SQL.Schema, o.Node); err != nil {
			return nil, err
		}
	}
	if err := checkGrants(ctx, db, o.Grants); err != nil {
		return nil, err
	}
	from := 0
	if in, err := inspect(ctx, db, o.SQL.Schema); err == nil {
		from = in.Release
	}
	res, err := apply(ctx, db, o.SQL, o.Node)
	if err != nil {
		return nil, err
	}
	rep := &Report{Result: res, From: from, Citus: repair}
	if repair != nil {
		if err := resumeCopied(ctx, db, res.Schema, repair); err != nil {
			return rep, err
		}
	}
	if in, err := inspect(ctx, db, res.Schema); err == nil && in.Node.State == catalog.NodeUnset {
		rep.NodeUnset = true
	}
	if err := grant(ctx, db, res.Schema, o.Grants); err != nil {
		return rep, err
	}
	if s, err := catalog.ParseSchema(res.Schema); err == nil {
		rep.IDMakers, rep.IDMakersOK, _ = catalog.IDMakers(ctx, catalog.DB(db), s)
	}
	return rep, nil
}

// ErrNativeUpgrade: RunDB would upgrade a schema whose
// snowflake_next_id() is the native generator, which the upgrade replaces
// by the SQL one; `sfgen install` (Run) installs the native one again.
var ErrNativeUpgrade = errors.New("an upgrade would replace the native generator")

// RunDB is Run for a caller that has a *sql.DB of any driver and keeps the
// schema's generator (o.Generator must be Keep): the same checks, lock,
// upgrades and refusals, and the node a first install gets. It refuses,
// before it changes anything, to upgrade a schema whose
// snowflake_next_id() is the native generator (ErrNativeUpgrade, in a
// *StepError): the upgrade would put the SQL one back, and installing the
// native one again takes Run's pgx session.
func RunDB(ctx context.Context, db *sql.DB, o Options) (*Report, error) {
	if o.Generator != Keep {
		return nil, errors.New("install: RunDB keeps the schema's generator; switch generators with Run")
	}
	in, err := inspect(ctx, db, o.SQL.Schema)
	if err != nil {
		return nil, untrustedCheck(o.SQL.Schema, err)
	}
	if in.NativeLibrary != "" && in.Effective() < sqlgen.Latest {
		schema := in.Schema.Name()
		return nil, &StepError{Kind: ErrNativeUpgrade, text: func(string) string {
			return fmt.Sprintf("schema %s is at sfgen release %d and its snowflake_next_id() is the native generator (%s), which the upgrade to release %d replaces by the SQL one; nothing was changed: upgrade it with 'sfgen install --schema %s', which installs the native one again", schema, in.Release, in.NativeLibrary, sqlgen.Latest, schema)
		}}
	}
	return release(ctx, db, o)
}

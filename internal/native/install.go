package native

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlstate"
)

// The names the native generator goes by in a schema.
const (
	// FunctionName is the SQL generator's name, which Install takes over.
	FunctionName = "snowflake_next_id"
	// SideBySideName is the name InstallSideBySide gives it, beside the
	// SQL snowflake_next_id().
	SideBySideName = "snowflake_next_id_native"
)

var sqlTemplates = template.Must(template.New("").ParseFS(sqlFS, "sql/*.sql.tmpl"))

type sqlData struct {
	Schema, SchemaLiteral string
	Name                  string
	Library               string
	NextState             string // a to_regprocedure argument, as a literal
	Comment               string
	// The wrapped shape's (template "wrapped"), all literals.
	WrapperBody, CComment, MissingComment, MissingMessage, MissingHint string
}

// CFunction is the C function behind a native snowflake_next_id(), and
// Missing the PL/pgSQL one a call of it resolves to when it is not there.
const (
	CFunction = "snowflake_next_id_c(integer)"
	Missing   = "snowflake_next_id_c(bigint)"
)

// wrapperBody is the body of the native snowflake_next_id() in schema q
// (quoted).
func wrapperBody(q string) string { return "SELECT " + q + ".snowflake_next_id_c(0)" }

func renderSQL(name string, d sqlData) (string, error) {
	var b bytes.Buffer
	if err := sqlTemplates.ExecuteTemplate(&b, name, d); err != nil {
		return "", fmt.Errorf("render %s: %w", name, err)
	}
	return b.String(), nil
}

func newSQLData(schema, name, library string, in catalog.Installed) sqlData {
	l := in.Layout
	q := pgident.Quote(schema)
	return sqlData{
		Schema:        q,
		SchemaLiteral: pgident.QuoteLiteral(q),
		Name:          name,
		Library:       pgident.QuoteLiteral(library),
		NextState:     pgident.QuoteLiteral(q + ".snowflake_next_state()"),
		WrapperBody:   pgident.QuoteLiteral(wrapperBody(q)),
		CComment: pgident.QuoteLiteral(fmt.Sprintf("sfgen's native generator in %s, built for layout %s, which snowflake_next_id() calls; not for direct use. %s",
			library, l.String(), catalog.ReleaseMarker(in.Release))),
		MissingComment: pgident.QuoteLiteral(fmt.Sprintf("What snowflake_next_id() calls when the C function %s.%s is missing (a restore where its library was not loadable): SQLSTATE SF303 naming the commands that fix it. %s",
			q, CFunction, catalog.ReleaseMarker(in.Release))),
		MissingMessage: pgident.QuoteLiteral(fmt.Sprintf("sfgen: snowflake_next_id() of schema %s is the native generator, and its C function %s.%s is not in this database: its library (%s) could not be loaded where this database was restored or created",
			schema, q, CFunction, library)),
		MissingHint: pgident.QuoteLiteral(fmt.Sprintf("as a superuser on this server, run 'sfgen install --schema %s --native --native-dir DIR' (builds the library here and installs it; or 'sfgen build-native' then 'sfgen install --schema %s --native'), or 'sfgen install --schema %s --native=false' for the SQL generator on the same state; see docs/native.md",
			schema, schema, schema)),
		Comment: pgident.QuoteLiteral(fmt.Sprintf("A new Snowflake ID for this database's node (see snowflake_node()), made in C by %s (sfgen's native generator, built for layout %s): the state protocol of the SQL generator (sfgen release %d's) on the same state, so that the two can run at once. Unique across sessions, rollbacks, cancels and restarts; never repeats when the clock steps back; borrows the next millisecond rather than waiting. See docs/native.md. %s",
			library, l.String(), Release, catalog.ReleaseMarker(in.Release))),
	}
}

// Install switches schema's snowflake_next_id() to the native generator
// in the library soPath (from Build), keeping its OID, so that column
// defaults that call it call the C code from their next statement on. It
// runs in one transaction: on any error the database is as it was. It
// needs a superuser on the server's own machine (the server loads
// soPath), and schema must hold sfgen release 2 for the layout the library
// was built for. The function is then owned by the owner of the schema's
// other sfgen objects, whom Uninstall needs.
func Install(ctx context.Context, conn *pgx.Conn, schema, soPath string) error {
	return installAs(ctx, conn, schema, soPath, FunctionName)
}

// InstallSideBySide creates the native generator as schema's
// snowflake_next_id_native(), beside the SQL snowflake_next_id(), on the
// same state: both can be used at once. Otherwise as Install.
func InstallSideBySide(ctx context.Context, conn *pgx.Conn, schema, soPath string) error {
	return installAs(ctx, conn, schema, soPath, SideBySideName)
}

func installAs(ctx context.Context, conn *pgx.Conn, schema, soPath, name string) (err error) {
	if err := pgident.ValidateSchema(schema); err != nil {
		return err
	}
	if !filepath.IsAbs(soPath) && !IsPortableName(soPath) {
		return fmt.Errorf("native: library path %q is not absolute, nor a portable name (sfgen_native_<layout hash>): the server resolves it, not this process", soPath)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("native: install into schema %s: %w", schema, err)
	}
	defer func() {
		if err != nil {
			tx.Rollback(context.Background())
		}
	}()
	if _, err := tx.Exec(ctx, "SET LOCAL search_path = pg_catalog, pg_temp"); err != nil {
		return fmt.Errorf("native: install into schema %s: %w", schema, err)
	}
	if err := CheckSuperuser(ctx, tx); err != nil {
		return err
	}
	in, err := checkInstalled(ctx, tx, schema)
	if err != nil {
		return err
	}
	d := newSQLData(schema, name, soPath, in)
	built, err := libraryLayout(ctx, tx, d)
	if err != nil {
		return err
	}
	if built != in.Layout.String() {
		return fmt.Errorf("native: %w: %s was built for layout %s, schema %s holds layout %s", ErrLayout, soPath, built, schema, in.Layout)
	}
	release, err := libraryRelease(ctx, tx, d)
	if err != nil {
		return err
	}
	if release != Release {
		return oldLibrary(soPath, release)
	}
	create, err := renderSQL("create", d)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, create); err != nil {
		return fmt.Errorf("native: create %s.%s(): %w", schema, name, err)
	}
	// One ID, as a check that the C code finds what it needs (a sequence
	// value is not reused for it: nothing is lost but one ID); all of it
	// when no node is set yet, since it looks everything up before it
	// asks snowflake_node_bits(), whose SF201 says so (in a savepoint,
	// which that error rolls back).
	smoke, err := renderSQL("smoke", d)
	if err != nil {
		return err
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return fmt.Errorf("native: install into schema %s: %w", schema, err)
	}
	var id int64
	var pgErr *pgconn.PgError
	switch err := sp.QueryRow(ctx, smoke).Scan(&id); {
	case errors.As(err, &pgErr) && pgErr.Code == sqlstate.NoNode:
		if err := sp.Rollback(ctx); err != nil {
			return fmt.Errorf("native: install into schema %s: %w", schema, err)
		}
	case err != nil:
		return fmt.Errorf("native: %s.%s() after install: %w", schema, name, err)
	default:
		if err := sp.Commit(ctx); err != nil {
			return fmt.Errorf("native: install into schema %s: %w", schema, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("native: install into schema %s: %w", schema, err)
	}
	return nil
}

// CheckSuperuser returns nil when the role of q (a *pgx.Conn or pgx.Tx)
// is a superuser, who alone can create a C function, and otherwise an
// error wrapping ErrNotSuperuser.
func CheckSuperuser(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) error {
	query, err := renderSQL("superuser", sqlData{})
	if err != nil {
		return err
	}
	var super bool
	var role string
	if err := q.QueryRow(ctx, query).Scan(&super, &role); err != nil {
		return fmt.Errorf("native: read the current role: %w", err)
	}
	if !super {
		return fmt.Errorf("native: %w: role %s cannot create a C function; install the native generator as a superuser (the functions it creates then belong to the schema's sfgen owner, and callers need no more privilege than for the SQL one)", ErrNotSuperuser, role)
	}
	return nil
}

func checkInstalled(ctx context.Context, tx pgx.Tx, schema string) (catalog.Installed, error) {
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		return catalog.Installed{}, err
	}
	in, err := catalog.Inspect(ctx, catalog.PGX(tx), s)
	if err != nil {
		return in, fmt.Errorf("native: %w", err)
	}
	if !slices.Contains(Releases, in.Release) || in.Effective() != in.Release {
		what := fmt.Sprintf("release %d", in.Release)
		switch {
		case in.Release == 0:
			what = "no sfgen"
		case len(in.Stale) > 0:
			what = fmt.Sprintf("release %d mixed with an older release's functions (%v)", in.Release, in.Stale)
		}
		return in, fmt.Errorf("native: %w: schema %s holds %s; the native generator follows the state protocol of releases %v (run sfgen install first)", ErrNotInstalled, schema, what, Releases)
	}
	return in, nil
}

// ServerFinds returns the file the server behind conn finds for a library
// name without a directory (a PortableName), as PostgreSQL looks it up:
// along its dynamic_library_path, with $libdir its own library
// directory, the name and then the name with ".so"; "" when it finds
// none. It looks in this machine's file system, which must be the
// server's (as for Build). It needs a superuser (pg_config).
func ServerFinds(ctx context.Context, conn *pgx.Conn, name string) (string, error) {
	q, err := renderSQL("library_path", sqlData{})
	if err != nil {
		return "", err
	}
	var path, libdir string
	if err := conn.QueryRow(ctx, q).Scan(&path, &libdir); err != nil {
		return "", fmt.Errorf("native: read the server's dynamic_library_path: %w", err)
	}
	for _, n := range []string{name, name + ".so"} {
		for _, dir := range filepath.SplitList(path) {
			if rest, ok := strings.CutPrefix(dir, "$libdir"); ok {
				dir = libdir + rest
			}
			if dir == "" || !filepath.IsAbs(dir) {
				continue
			}
			f := filepath.Join(dir, n)
			if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
				return f, nil
			}
		}
	}
	return "", nil
}

// Load asks the server behind conn to load the library at path, as
// Install will: it fails, with the server's error, where the server cannot
// (the file is not on its machine, not readable by its OS user, or built
// for another major version).
func Load(ctx context.Context, conn *pgx.Conn, path string) error {
	q, err := renderSQL("load_library", sqlData{Library: pgident.QuoteLiteral(path)})
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, q)
	return err
}

// libraryLayout loads the library into the server and returns the layout
// it was built for. Its errors wrap ErrLoad.
func libraryLayout(ctx context.Context, tx pgx.Tx, d sqlData) (string, error) {
	var layout string
	for _, step := range []string{"load", "layout", "unload"} {
		q, err := renderSQL(step, d)
		if err != nil {
			return "", err
		}
		if step == "layout" {
			err = tx.QueryRow(ctx, q).Scan(&layout)
		} else {
			_, err = tx.Exec(ctx, q)
		}
		if err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				return "", fmt.Errorf("native: %w: %s (is the library on the server's machine, readable by the server's user, and built with the server's major version's pg_config?)", ErrLoad, pe.Message)
			}
			return "", fmt.Errorf("native: %w: %v", ErrLoad, err)
		}
	}
	return layout, nil
}

// libraryRelease is the SQL release whose state protocol the library of
// d follows (sfgen_native_release()), or 0 for a library built before
// release 7, which has no such function. It runs in a savepoint of tx.
func libraryRelease(ctx context.Context, tx pgx.Tx, d sqlData) (int, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer sp.Rollback(context.Background())
	var release int
	for _, step := range []string{"release_load", "release", "release_unload"} {
		q, err := renderSQL(step, d)
		if err != nil {
			return 0, err
		}
		if step == "release" {
			err = sp.QueryRow(ctx, q).Scan(&release)
		} else {
			_, err = sp.Exec(ctx, q)
		}
		var pe *pgconn.PgError
		if step == "release_load" && errors.As(err, &pe) && pe.Code == "42883" {
			return 0, nil // undefined_function: no sfgen_native_release in the library
		}
		if err != nil {
			return 0, fmt.Errorf("native: %w: %v", ErrLoad, err)
		}
	}
	return release, sp.Commit(ctx)
}

// LibraryRelease is the SQL release whose state protocol library (an
// absolute path or a PortableName) follows: Release for one built now, 0
// for one built before release 7. It loads the library in a transaction
// of conn's that it rolls back.
func LibraryRelease(ctx context.Context, conn *pgx.Conn, library string) (int, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.Background())
	return libraryRelease(ctx, tx, sqlData{Library: pgident.QuoteLiteral(library)})
}

// oldLibrary is the error for a library that follows another release's
// state protocol than Release.
func oldLibrary(library string, release int) error {
	built := fmt.Sprintf("release %d", release)
	if release == 0 {
		built = "releases 2 to 6 (built before release 7)"
	}
	return fmt.Errorf("native: %w: %s follows the state protocol of %s; this sfgen's native generator follows release %d's: rebuild it (sfgen build-native, or sfgen install --native --native-dir DIR)", ErrOldLibrary, library, built, Release)
}

// A Shape is which generator a schema's snowflake_next_id() is.
type Shape string

const (
	ShapeNone Shape = ""    // no snowflake_next_id()
	ShapeSQL  Shape = "sql" // the SQL generator
	// ShapeC: the C function itself, as Install made it before the
	// wrapper (sfgen 0.x up to this change): a dump of the database does
	// not restore the tables whose defaults call it where the library is
	// missing. The next Install (sfgen install) replaces it by ShapeWrapped.
	ShapeC Shape = "c"
	// ShapeWrapped: the LANGUAGE sql snowflake_next_id() over the C
	// function CFunction, as Install makes it.
	ShapeWrapped Shape = "wrapped"
	// ShapeMissing: the wrapper without its C function (restored where
	// the library was not loadable): every call raises SF303.
	ShapeMissing Shape = "missing"
)

// A Generator is what a schema's snowflake_next_id() is.
type Generator struct {
	Shape   Shape
	Library string // the C function's library (as pg_proc has it), with ShapeC and ShapeWrapped
}

// Native reports whether it is the native generator, with or without its
// C function.
func (g Generator) Native() bool {
	return g.Shape == ShapeC || g.Shape == ShapeWrapped || g.Shape == ShapeMissing
}

// InstalledGenerator reads which generator schema's snowflake_next_id()
// is, from the system catalogs alone (it calls nothing).
func InstalledGenerator(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, schema string) (Generator, error) {
	if err := pgident.ValidateSchema(schema); err != nil {
		return Generator{}, err
	}
	query, err := renderSQL("state", sqlData{})
	if err != nil {
		return Generator{}, err
	}
	var g Generator
	if err := q.QueryRow(ctx, query, schema, wrapperBody(pgident.Quote(schema))).Scan(&g.Shape, &g.Library); err != nil {
		return Generator{}, fmt.Errorf("native: read snowflake_next_id() of schema %s: %w", schema, err)
	}
	return g, nil
}

// ErrCannotRun: snowflake_next_id() is the native generator, and this
// server cannot run it: its C function is missing (a restore where the
// library was not loadable) or the server cannot load its library (a
// standby or a new server without it). Check's errors wrap it.
var ErrCannotRun = errors.New("the native generator cannot run on this server")

// Check returns schema's generator, and an error wrapping ErrCannotRun,
// saying which library and which commands fix it, when it is the native
// one and this server cannot run it. It makes no ID: it has the server
// set up a statement that would call it, which loads the library.
func Check(ctx context.Context, conn *pgx.Conn, schema string) (Generator, error) {
	g, err := InstalledGenerator(ctx, conn, schema)
	if err != nil || !g.Native() {
		return g, err
	}
	fix := fmt.Sprintf("as a superuser on this server, run 'sfgen install --schema %s --native --native-dir DIR' (builds the library here and installs it), or 'sfgen install --schema %s --native=false' for the SQL generator on the same state (docs/native.md)", schema, schema)
	if IsPortableName(g.Library) {
		fix = fmt.Sprintf("run 'sfgen build-native' on this server's machine (it puts %s.so in the server's $libdir; or 'sfgen build-native --native-dir DIR' with DIR in its dynamic_library_path), or, as a superuser, 'sfgen install --schema %s --native --native-dir DIR', or 'sfgen install --schema %s --native=false' for the SQL generator on the same state (docs/native.md)", g.Library, schema, schema)
	}
	if g.Shape == ShapeMissing {
		return g, fmt.Errorf("%w: snowflake_next_id() of schema %s is the native generator, and its C function %s.%s is missing (the database was restored or copied where its library was not loadable): %s",
			ErrCannotRun, schema, schema, CFunction, fix)
	}
	probe, err := renderSQL("probe", sqlData{Schema: pgident.Quote(schema)})
	if err != nil {
		return g, err
	}
	var pe *pgconn.PgError
	if _, err := conn.Exec(ctx, probe); errors.As(err, &pe) {
		return g, fmt.Errorf("%w: snowflake_next_id() of schema %s is the native generator, and this server cannot load the native generator's library %s: %s; %s",
			ErrCannotRun, schema, g.Library, pe.Message, fix)
	} else if err != nil {
		return g, fmt.Errorf("native: check snowflake_next_id() of schema %s: %w", schema, err)
	}
	return g, nil
}

// InstalledLibrary returns the path of the library schema's snowflake_next_id()
// is made by when it is the native generator, and "" when it is not (the
// SQL one, or none, or the native one without its C function). It also
// checks that sfgen's objects in schema are trusted (catalog.Inspect).
func InstalledLibrary(ctx context.Context, conn *pgx.Conn, schema string) (string, error) {
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		return "", err
	}
	if _, err := catalog.Inspect(ctx, catalog.PGX(conn), s); err != nil {
		return "", fmt.Errorf("native: %w", err)
	}
	g, err := InstalledGenerator(ctx, conn, schema)
	return g.Library, err
}

// Uninstall puts the SQL snowflake_next_id() back in schema, when the
// native one replaced it, by running the plain install script of the
// latest release in the schema's layout again (which keeps the node and
// the state; a schema at an older release is refused: its upgrade, 'sfgen
// install', puts the SQL generator back itself), as the
// owner of the schema's sfgen objects (a superuser, or that owner, must
// call it); and drops snowflake_next_id_native() and the wrapper's C
// functions if there are any. conn must not be in a transaction: the
// script is one of its own. Each step is atomic and Uninstall can run
// again.
func Uninstall(ctx context.Context, conn *pgx.Conn, schema string) error {
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		return err
	}
	in, err := catalog.Inspect(ctx, catalog.PGX(conn), s)
	if err != nil {
		return fmt.Errorf("native: %w", err)
	}
	if in.Release == 0 {
		return fmt.Errorf("native: %w: schema %s holds no sfgen", ErrNotInstalled, schema)
	}
	g, err := InstalledGenerator(ctx, conn, schema)
	if err != nil {
		return err
	}
	d := newSQLData(schema, FunctionName, "", in)
	if g.Native() {
		if err := restoreSQL(ctx, conn, schema, in, d); err != nil {
			return err
		}
	}
	for _, step := range []string{"drop_wrapped", "drop_side"} {
		drop, err := renderSQL(step, d)
		if err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, drop); err != nil {
			return fmt.Errorf("native: drop the native functions of schema %s: %w", schema, err)
		}
	}
	return nil
}

// restoreSQL runs the plain script over schema as the owner of its sfgen
// objects.
func restoreSQL(ctx context.Context, conn *pgx.Conn, schema string, in catalog.Installed, d sqlData) error {
	if in.Release != sqlgen.Latest {
		return fmt.Errorf("native: schema %s is at sfgen release %d, not %d: upgrade it with 'sfgen install --schema %s', which puts the SQL snowflake_next_id() back", schema, in.Release, sqlgen.Latest, schema)
	}
	script, err := sqlgen.Script(sqlgen.Options{Layout: in.Layout, Schema: schema})
	if err != nil {
		return fmt.Errorf("native: %w", err)
	}
	ownerQ, err := renderSQL("owner", d)
	if err != nil {
		return err
	}
	var owner, current string
	if err := conn.QueryRow(ctx, ownerQ).Scan(&owner, &current); err != nil {
		return fmt.Errorf("native: read the owner of %s.snowflake_next_state(): %w", schema, err)
	}
	if owner != current {
		if _, err := conn.Exec(ctx, "SET ROLE "+pgident.Quote(owner)); err != nil {
			return fmt.Errorf("native: become %s, the owner of schema %s's sfgen objects, to put the SQL generator back: %w", owner, schema, err)
		}
		defer conn.Exec(context.Background(), "RESET ROLE")
	}
	if _, err := conn.Exec(ctx, string(script)); err != nil {
		return fmt.Errorf("native: put the SQL snowflake_next_id() back in schema %s: %w", schema, err)
	}
	return nil
}

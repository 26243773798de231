package native_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/generatortest"
)

// buildRoot holds the libraries the tests build, one directory a layout,
// removed by TestMain.
var buildRoot string

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if buildRoot != "" {
		os.RemoveAll(buildRoot)
	}
	os.Exit(code)
}

var (
	buildMu sync.Mutex
	built   = map[snowflake.Layout]builtLib{}
)

type builtLib struct {
	path string
	err  error
}

// serverIsHere reports whether the server the tests use can load a file
// of this machine's: a throwaway cluster, or $DATABASE_URL where the
// server binaries are here too. Where only a remote $DATABASE_URL is (CI's
// second run hides the binaries, docker-compose's test service has none),
// the tests that load the library skip, saying so.
func serverIsHere(t *testing.T) {
	t.Helper()
	if why := pgcluster.NoDevelopmentFiles(); why != "" {
		t.Skip(why)
	}
	if !pgtest.External() {
		return
	}
	if _, err := pgcluster.FindBinDir(""); err != nil {
		t.Skipf("the native generator must be loaded by the server from this machine's files, and the server is $%s's with no server binaries here: %v", pgtest.EnvVar, err)
	}
}

// library builds the native generator for l once per test binary and
// returns its path. Without pg_config, the server headers, make or the
// compiler it skips, except under CI=true, where it fails: CI's first run
// has them.
func library(t *testing.T, l snowflake.Layout) string {
	t.Helper()
	serverIsHere(t)
	buildMu.Lock()
	defer buildMu.Unlock()
	b, ok := built[l]
	if !ok {
		b.path, b.err = build(l)
		built[l] = b
	}
	if errors.Is(b.err, native.ErrNoPGConfig) || errors.Is(b.err, native.ErrNoHeaders) || errors.Is(b.err, native.ErrNoToolchain) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the native generator cannot be built: %v", b.err)
		}
		t.Skipf("the native generator cannot be built here: %v", b.err)
	}
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func build(l snowflake.Layout) (string, error) {
	if buildRoot == "" {
		dir, err := os.MkdirTemp("", "sfnative")
		if err != nil {
			return "", err
		}
		// The server, another user, reads the library.
		if err := os.Chmod(dir, 0o755); err != nil {
			return "", err
		}
		buildRoot = dir
	}
	var opts []native.BuildOption
	// The server's own pg_config, when the server is found here.
	if dir, err := pgcluster.FindBinDir(""); err == nil {
		if p := filepath.Join(dir, "pg_config"); isFile(p) {
			opts = append(opts, native.WithPGConfig(p))
		}
	}
	return native.Build(context.Background(), filepath.Join(buildRoot, fmt.Sprintf("l%d", len(built))), l, opts...)
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// The database helpers of every generator's tests, written once in
// generatortest.
var (
	connect       = generatortest.Connect
	installScript = generatortest.InstallScript
	mustExec      = generatortest.MustExec
	queryInt      = generatortest.QueryInt
	nowMs         = generatortest.NowMs
)

// setup installs sfgen for o in a new database and the native generator
// over its snowflake_next_id() (or beside it, as
// snowflake_next_id_native(), when side is true), and returns the
// database's DSN and a connection to it.
func setup(t *testing.T, o sqlgen.Options, side bool) (string, *pgx.Conn) {
	t.Helper()
	so := library(t, o.Layout)
	dsn := pgtest.DSN(t)
	conn := connect(t, dsn)
	installNative(t, conn, o, so, side)
	return dsn, conn
}

func installNative(t *testing.T, conn *pgx.Conn, o sqlgen.Options, so string, side bool) {
	t.Helper()
	installScript(t, conn, o)
	schema := o.Schema
	if schema == "" {
		schema = catalog.Public.Name()
	}
	install := native.Install
	if side {
		install = native.InstallSideBySide
	}
	if err := install(context.Background(), conn, schema, so); err != nil {
		t.Fatalf("install the native generator: %v", err)
	}
	// It is the C function now: snowflake_next_id_native() itself, or
	// snowflake_next_id() over snowflake_next_id_c(integer).
	name := native.CFunction
	if side {
		name = native.SideBySideName + "()"
	} else if g, err := native.InstalledGenerator(context.Background(), conn, schema); err != nil || g.Shape != native.ShapeWrapped || g.Library != so {
		t.Fatalf("after install, %s.snowflake_next_id() is %+v (%v), want the wrapper over %s", schema, g, err, so)
	}
	var lang string
	if err := conn.QueryRow(context.Background(), `SELECT l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
		WHERE p.oid = to_regprocedure($1)`, fmt.Sprintf("%q.%s", schema, name)).Scan(&lang); err != nil || lang != "c" {
		t.Fatalf("after install, %s.%s is in %q (%v), want c", schema, name, lang, err)
	}
}

var tw = snowflake.Twitter()

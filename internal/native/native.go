// Package native builds and installs sfgen's snowflake_next_id() in C, a
// PostgreSQL extension for servers that load C code, which keeps every
// guarantee of the SQL generator and shares its state (docs/native.md).
//
// [Header] renders the C header of a layout's constants from the same
// [snowflake.Layout] value as the Go composer and the SQL; [Build] writes
// the sources of package native (the repository's native/ directory) and
// that header into a directory and builds them with PGXS (make
// USE_PGXS=1), which needs pg_config and the server's headers
// (postgresql-server-dev-NN on Debian). [Install] switches a schema's
// snowflake_next_id() to the built library, in one transaction, as a
// superuser; [InstallSideBySide] adds it as snowflake_next_id_native()
// beside the SQL one instead; [Uninstall] puts the SQL definition back.
// The library needs no shared_preload_libraries, and callers of the
// function need no privilege beyond the SQL generator's.
package native

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/idkit"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlstate"
	nativesrc "github.com/sfgen/sfgen/native"
)

// Release is the SQL release whose state protocol the C code follows.
// Release 7 catches up in turns and reads a guard of its own
// (snowflake_caught_up); the C code reads that guard and calls its
// snowflake_next_state() for the slow path. Release 8's guard holds the
// fast path's deadline (the catch-up's millisecond + sqlgen.CatchUpDue)
// rather than the millisecond.
const Release = 8

// Releases are the SQL releases the native generator installs over:
// Release to sqlgen.Latest, whose snowflake_next_id(),
// snowflake_next_state() and state objects follow Release's protocol
// (TestReleasesShareTheProtocol checks each one sqlgen renders). A
// release that changes the protocol raises Release. Releases 2 to 6
// shared release 2's protocol, which a library built before release 7
// follows; such a library is named apart (LibraryHash), so that a server
// can keep both.
var Releases = func() (r []int) {
	for v := Release; v <= sqlgen.Latest; v++ {
		r = append(r, v)
	}
	return r
}()

// Library is the file name of the built library in Build's directory.
const Library = "sfgen_native.so"

// HeaderName is the name of the generated header the C source includes.
const HeaderName = "sfgen_layout.h"

// Errors that say why the native generator cannot be built or installed.
var (
	// ErrNoPGConfig: no pg_config that runs ($PG_CONFIG, PATH, Debian's
	// /usr/lib/postgresql/*/bin).
	ErrNoPGConfig = errors.New("no pg_config")
	// ErrNoHeaders: pg_config names a server include directory without
	// postgres.h (install postgresql-server-dev-NN).
	ErrNoHeaders = errors.New("no PostgreSQL server headers")
	// ErrNoToolchain: no make, or not the C compiler pg_config names.
	ErrNoToolchain = errors.New("no make or C compiler")
	// ErrBuild: make failed.
	ErrBuild = errors.New("build of the native generator failed")
	// ErrNotSuperuser: creating a C function takes a superuser.
	ErrNotSuperuser = errors.New("not a superuser")
	// ErrLoad: the server cannot load the library (not on its machine,
	// not readable by it, built for another major version).
	ErrLoad = errors.New("the server cannot load the native generator")
	// ErrNotInstalled: the schema does not hold an sfgen release of Releases.
	ErrNotInstalled = errors.New("no sfgen release the native generator follows in the schema")
	// ErrLayout: the library was built for another layout than the schema's.
	ErrLayout = errors.New("layout mismatch")
	// ErrOldLibrary: the library follows another release's state
	// protocol (one built before release 7).
	ErrOldLibrary = errors.New("library of another state protocol")
)

//go:embed header.h.tmpl
var headerTemplate string

//go:embed sql/*.sql.tmpl
var sqlFS embed.FS

var header = template.Must(template.New("header").Parse(headerTemplate))

type headerData struct {
	Layout                                 string
	Release                                int
	Epoch, MaxSequence, MinState, MaxState int64
	SequenceBits, NodeBits, TimestampShift uint
	TimestampError                         string // a C string literal, a format with one %lld
	NativeLayoutState                      string // sqlstate.NativeLayout
}

// Header renders the C header of l's constants. The zero Layout is an
// error wrapping snowflake.ErrZeroLayout.
func Header(l snowflake.Layout) ([]byte, error) {
	if l.IsZero() {
		return nil, fmt.Errorf("native: header: %w", snowflake.ErrZeroLayout)
	}
	sb := l.Bits(snowflake.FieldSequence)
	// The SQL's range message, with %lld where it shows the value.
	msg := idkit.RangeMessage(snowflake.FieldTimestamp, "\x00", l.Min(snowflake.FieldTimestamp), l.Max(snowflake.FieldTimestamp))
	msg = strings.ReplaceAll(strings.ReplaceAll(msg, "%", "%%"), "\x00", "%lld")
	d := headerData{
		Layout:         l.String(),
		Release:        Release,
		Epoch:          l.Epoch(),
		MaxSequence:    l.Max(snowflake.FieldSequence),
		MinState:       l.Epoch() << sb,
		MaxState:       l.Max(snowflake.FieldTimestamp)<<sb | l.Max(snowflake.FieldSequence),
		SequenceBits:   sb,
		NodeBits:       l.Bits(snowflake.FieldDatacenter) + l.Bits(snowflake.FieldMachine),
		TimestampShift: l.Shift(snowflake.FieldTimestamp),
		TimestampError: cString(msg),

		NativeLayoutState: sqlstate.NativeLayout,
	}
	var b bytes.Buffer
	if err := header.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("render %s: %w", HeaderName, err)
	}
	return b.Bytes(), nil
}

// cString quotes s, printable ASCII, as a C string literal.
func cString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r > 0x7e:
			fmt.Fprintf(&b, "\\%03o", r&0xff)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// A BuildOption changes how Build builds.
type BuildOption func(*buildConfig)

type buildConfig struct{ pgConfig string }

// WithPGConfig builds with the given pg_config (it must be the server's
// major version); by default FindPGConfig's.
func WithPGConfig(path string) BuildOption { return func(c *buildConfig) { c.pgConfig = path } }

// FindPGConfig returns the pg_config to build with: $PG_CONFIG when set,
// else the one on PATH, else the highest-numbered Debian
// /usr/lib/postgresql/*/bin/pg_config; each must run. Its error wraps
// ErrNoPGConfig and names every place it looked.
func FindPGConfig() (string, error) {
	var tried, candidates []string
	if p := os.Getenv("PG_CONFIG"); p != "" {
		candidates = append(candidates, p)
	} else {
		if p, err := exec.LookPath("pg_config"); err == nil {
			candidates = append(candidates, p)
		} else {
			tried = append(tried, "PATH")
		}
		if dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_config"); len(dirs) > 0 {
			for i := len(dirs) - 1; i >= 0; i-- {
				candidates = append(candidates, dirs[i])
			}
		} else {
			tried = append(tried, "/usr/lib/postgresql/*/bin")
		}
	}
	for _, p := range candidates {
		if out, err := exec.Command(p, "--version").CombinedOutput(); err != nil {
			tried = append(tried, fmt.Sprintf("%s (%v: %s)", p, err, strings.TrimSpace(string(out))))
			continue
		}
		return p, nil
	}
	return "", fmt.Errorf("%w: looked in %s; install the server's development files (postgresql-server-dev-NN) or set $PG_CONFIG", ErrNoPGConfig, strings.Join(tried, ", "))
}

// Build writes the native sources and l's header into dir (created if
// need be) and builds them with PGXS; it returns the absolute path of the
// library. dir and the library are made readable by every user, since
// the server, which loads it, runs as its own. The error wraps
// ErrNoPGConfig, ErrNoHeaders, ErrNoToolchain or ErrBuild (with make's
// output).
func Build(ctx context.Context, dir string, l snowflake.Layout, opts ...BuildOption) (string, error) {
	c, err := resolveConfig(opts)
	if err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, c.pgConfig, "--includedir-server", "--cc", "--version").Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != 3 {
		return "", fmt.Errorf("%w: %s --includedir-server --cc --version: %v", ErrNoPGConfig, c.pgConfig, err)
	}
	include, cc, version := strings.TrimSpace(lines[0]), strings.Fields(lines[1]), strings.TrimSpace(lines[2])
	if _, err := os.Stat(filepath.Join(include, "postgres.h")); err != nil {
		return "", fmt.Errorf("%w: %s has no postgres.h (pg_config %s, %s); install postgresql-server-dev-NN",
			ErrNoHeaders, include, c.pgConfig, version)
	}
	for _, tool := range []string{"make", firstOr(cc, "cc")} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%w: %v (pg_config %s builds with %q); install make and the compiler (build-essential)", ErrNoToolchain, err, c.pgConfig, strings.Join(cc, " "))
		}
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	h, err := Header(l)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, HeaderName), h, 0o644); err != nil {
		return "", err
	}
	err = fs.WalkDir(nativesrc.Sources, "src", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := nativesrc.Sources.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, filepath.Base(path)), b, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("write the native sources: %w", err)
	}
	// with_llvm=no: no JIT bitcode, so no clang needed.
	cmd := exec.CommandContext(ctx, "make", "-C", dir, "USE_PGXS=1", "PG_CONFIG="+c.pgConfig, "with_llvm=no")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: make in %s: %v\n%s", ErrBuild, dir, err, tail(b))
	}
	so := filepath.Join(dir, Library)
	if err := os.Chmod(so, 0o755); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBuild, err)
	}
	return so, nil
}

// resolveConfig applies opts, with FindPGConfig's pg_config when none
// is given.
func resolveConfig(opts []BuildOption) (buildConfig, error) {
	var c buildConfig
	for _, o := range opts {
		o(&c)
	}
	if c.pgConfig == "" {
		p, err := FindPGConfig()
		if err != nil {
			return c, err
		}
		c.pgConfig = p
	}
	return c, nil
}

// firstOr is s[0], or def when s is empty.
func firstOr(s []string, def string) string {
	if len(s) == 0 {
		return def
	}
	return s[0]
}

// tail is the end of a command's output, for an error.
func tail(b []byte) string {
	const n = 4000
	if len(b) > n {
		b = append([]byte("..."), b[len(b)-n:]...)
	}
	return strings.TrimSpace(string(b))
}

// LibraryHash names the library of a layout: the first 12 hex digits of
// the SHA-256 of its spec (snowflake.Layout.String()) and, from release
// 7, " protocol N" with N its Release (7, and 8 from release 8).
// Libraries of different layouts differ (the layout is compiled in), and
// so do those of different state protocols: a server keeps a loaded
// library by its path, and its databases at releases of different
// protocols each need their own (a library built before release 7 is
// named by the spec alone).
func LibraryHash(spec string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s protocol %d", spec, Release)))
	return hex.EncodeToString(sum[:6])
}

// PortableName is the name a C function gives the library of layout l
// by, without a directory, so that each server finds it where it keeps
// its own: PostgreSQL looks a name without a slash up along its
// dynamic_library_path (by default '$libdir', the directory of its own
// extensions), trying the name and then the name with ".so". A dump of a
// database whose C function names it restores, and the function runs, on
// any server that has the file there. PortableLibrary installs it.
func PortableName(l snowflake.Layout) string { return "sfgen_native_" + LibraryHash(l.String()) }

// IsPortableName reports whether name is a PortableName (of some layout).
func IsPortableName(name string) bool {
	h, ok := strings.CutPrefix(name, "sfgen_native_")
	if !ok || len(h) != 12 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

// ErrLibDir: the server's $libdir is not writable by this user.
var ErrLibDir = errors.New("cannot write into the server's library directory")

// PkgLibDir returns $libdir of the server pg_config (FindPGConfig's, or
// WithPGConfig's) belongs to: pg_config --pkglibdir.
func PkgLibDir(ctx context.Context, opts ...BuildOption) (string, error) {
	c, err := resolveConfig(opts)
	if err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, c.pgConfig, "--pkglibdir").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%w: %s --pkglibdir: %v %q", ErrNoPGConfig, c.pgConfig, err, dir)
	}
	return dir, nil
}

// PortableLibrary puts the library so (from Build, for layout l) into dir
// as PortableName(l)+".so", where a server whose dynamic_library_path
// names dir (its $libdir, say) finds it, and returns that path. The file
// is written beside and renamed into place, so that a server that has
// the old one loaded keeps its copy, and readable by every user. Where
// dir cannot be written the error wraps ErrLibDir.
func PortableLibrary(so, dir string, l snowflake.Layout) (string, error) {
	b, err := os.ReadFile(so)
	if err != nil {
		return "", fmt.Errorf("native: read the library: %w", err)
	}
	f, err := os.CreateTemp(dir, ".sfgen_native-*.so")
	if err != nil {
		return "", fmt.Errorf("native: %w %s: %v", ErrLibDir, dir, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o755)
	}
	dst := filepath.Join(dir, PortableName(l)+".so")
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		return "", fmt.Errorf("native: %w %s: %v", ErrLibDir, dir, err)
	}
	return dst, nil
}

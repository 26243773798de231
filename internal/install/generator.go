package install

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// A Choice is what an install does with snowflake_next_id()'s
// implementation: keep the one the schema has, or switch to one.
type Choice int

const (
	Keep   Choice = iota // keep the schema's generator (no --native flag)
	Native               // switch to the native (C) generator (--native)
	SQL                  // switch to the SQL generator (--native=false)
)

// Options says what Run does: the release line for SQL's schema and
// layout (as Apply), the node asked for, and the generator.
type Options struct {
	SQL sqlgen.Options
	// Node, when not nil, is a node asked for. A schema that has sfgen
	// already keeps its node, so Run refuses (ErrNodeKept) one that
	// differs from it; a nil field asks for the schema's.
	Node *Node
	// Generator says which snowflake_next_id() the schema ends with.
	Generator Choice
	// NativeDir is where, with Native, Run builds the library: under
	// NativeDir(NativeDir, layout), absolute, on the server's machine.
	NativeDir string
	// Grants are roles (names as they are, no case folding) to give
	// ID-making to after the install, with snowflake_grant(): from
	// release 8 no role but the owner makes IDs until it is granted.
	Grants []string
}

// A Node is a node asked for; a nil field is not asked for.
type Node struct {
	Datacenter, Machine *int64
}

// over returns the node datacenter, machine with n's fields in place of
// theirs.
func (n *Node) over(datacenter, machine int64) (int64, int64) {
	if n.Datacenter != nil {
		datacenter = *n.Datacenter
	}
	if n.Machine != nil {
		machine = *n.Machine
	}
	return datacenter, machine
}

// A Change is what Run did to snowflake_next_id()'s implementation.
type Change int

const (
	Unchanged   Change = iota
	ToNative           // switched to the native generator in Report.Library
	BackToSQL          // switched back to the SQL generator from Report.Library's
	NativeAgain        // the upgrade put the SQL one back; Report.Library's is installed again
)

// A Report says what Run did.
type Report struct {
	*Result        // what Apply applied
	NodeUnset bool // the schema has no node after the install
	// IDMakers are the roles besides the owner that may make IDs after
	// the install (catalog.IDMakers), ok false where it could not tell.
	IDMakers   []string
	IDMakersOK bool
	// From is the schema's release before the install (0: none).
	From      int
	Generator Change // what became of snowflake_next_id()
	Library   string // the native library Generator names
	// Citus is what the install undid of what Citus had made of the
	// schema on this node; nil where there was nothing.
	Citus *CitusRepair
}

// Errors Run returns, wrapped in a *StepError.
var (
	// ErrNativeUnavailable: the native generator cannot be installed
	// here (no superuser, no build, the server cannot load it); Run
	// found it out before it changed anything.
	ErrNativeUnavailable = errors.New("the native generator is not available")
	// ErrNodeKept: a node asked for is not the node of a schema that
	// has sfgen, which an install keeps. A usage error.
	ErrNodeKept = errors.New("install keeps a schema's node")
	// ErrGeneratorSwitch: the release line is applied, but the switch of
	// snowflake_next_id() it was to end with failed.
	ErrGeneratorSwitch = errors.New("the generator switch failed")
)

// A StepError is a step of Run that failed, with the message for it. Its
// Cause (a database's error, when there is one) is in the message as
// Message's func writes it: a CLI keeps passwords out of it.
type StepError struct {
	Kind  error // ErrNativeUnavailable, ErrNodeKept, ErrCitusCopied, ErrGeneratorSwitch or nil
	Cause error
	text  func(cause string) string
}

func (e *StepError) Error() string {
	return e.Message(func(err error) string { return err.Error() })
}

// Message is the error's text with its Cause written by cause.
func (e *StepError) Message(cause func(error) string) string {
	c := ""
	if e.Cause != nil {
		c = cause(e.Cause)
	}
	return e.text(c)
}

// Unwrap returns Kind and Cause.
func (e *StepError) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.Kind, e.Cause} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// NativeDir is where the native library for layout spec is built under
// dir: a directory per layout and state protocol (native.LibraryHash),
// since both are compiled in and the server keeps a loaded library by its
// path.
func NativeDir(dir, spec string) string {
	return filepath.Join(dir, "sfgen-"+native.LibraryHash(spec))
}

// BuildFailure says why native.Build failed: the machine lacks what it
// needs, or the build itself failed.
func BuildFailure(err error) string {
	if errors.Is(err, native.ErrNoPGConfig) || errors.Is(err, native.ErrNoHeaders) || errors.Is(err, native.ErrNoToolchain) {
		return "it cannot be built on this machine"
	}
	return "its build failed"
}

// Run installs sfgen into o.SQL's schema as `sfgen install` does: it
// reads which generator the schema has and, for Native, checks that the
// role is a superuser, builds the library and has the server load it,
// then checks the node asked for; all before anything changes, so that
// when one fails nothing does. It then applies the release line (Apply)
// and gives the schema the generator o asks for: Keep re-installs the
// native one when an upgrade replaced it by the SQL one. conn, a session
// on db's database, is the one the generator is read and switched on.
//
// Apply's errors come back as Apply returns them, with a nil Report;
// an error after Apply comes with the Report of what was applied.
func Run(ctx context.Context, db *sql.DB, conn *pgx.Conn, o Options) (*Report, error) {
	if err := checkServer(ctx, db); err != nil {
		return nil, err
	}
	g, err := prepareGenerator(ctx, conn, o)
	if err != nil {
		return nil, err
	}
	rep, err := release(ctx, db, o)
	if err != nil {
		return nil, err
	}
	return rep, g.finish(ctx, conn, rep.Schema, rep)
}

// A generatorPlan is what Run found and built before it applies the
// release line, for finish to carry out after it.
type generatorPlan struct {
	want    Choice
	before  string       // the native library the schema used before, if any
	shape   native.Shape // what snowflake_next_id() was before
	library string       // with Native: the library built for the layout
}

// prepareGenerator reads which generator schema o.SQL.Schema has and,
// for Native, checks that the connecting role is a superuser, builds the
// library and loads it.
func prepareGenerator(ctx context.Context, conn *pgx.Conn, o Options) (*generatorPlan, error) {
	p := &generatorPlan{want: o.Generator}
	// The schema first, as the install reads it whichever generator was
	// asked for: its errors are the schema's, not the native generator's.
	if err := readSchema(ctx, conn, o.SQL.Schema); err != nil {
		return nil, err
	}
	var err error
	if p.before, err = native.InstalledLibrary(ctx, conn, o.SQL.Schema); err != nil {
		return nil, untrustedCheck(o.SQL.Schema, err)
	}
	g, err := native.InstalledGenerator(ctx, conn, o.SQL.Schema)
	if err != nil {
		return nil, err
	}
	p.shape = g.Shape
	if p.want == Keep && g.Shape == native.ShapeMissing {
		// Restored where the library was not loadable: every insert
		// fails, and keeping that is no install.
		return nil, &StepError{Kind: ErrNativeUnavailable, text: func(string) string {
			return fmt.Sprintf("snowflake_next_id() of schema %s is the native generator, and its C function %s.%s is missing (the database was restored or copied where its library was not loadable): install it on this server with --native (the library 'sfgen build-native' put in the server's $libdir) or --native --native-dir DIR (built there), or switch to the SQL generator with --native=false; nothing was changed", o.SQL.Schema, o.SQL.Schema, native.CFunction)
		}}
	}
	if p.want == Keep && p.before != "" {
		// An upgrade puts the SQL generator back, and finish installs the
		// same library again: it must follow the latest state protocol
		// (one built before release 7 does not, and would never catch up
		// on release 7's objects).
		if r, err := native.LibraryRelease(ctx, conn, p.before); err == nil && r != native.Release {
			return nil, &StepError{Kind: ErrNativeUnavailable, text: func(string) string {
				return fmt.Sprintf("snowflake_next_id() of schema %s is the native generator in %s, built for an earlier state protocol than release %d's: install with --native (after 'sfgen build-native' on the server's machine) or --native --native-dir DIR, which builds the library anew, or with --native=false for the SQL generator; nothing was changed", o.SQL.Schema, p.before, native.Release)
			}}
		}
	}
	if p.want != Native {
		return p, nil
	}
	if err := native.CheckSuperuser(ctx, conn); errors.Is(err, native.ErrNotSuperuser) {
		return nil, &StepError{Kind: ErrNativeUnavailable, Cause: err, text: func(string) string {
			return "the native generator is not available to this role: creating a C function takes a superuser; nothing was changed (without --native, install keeps the SQL generator)"
		}}
	} else if err != nil {
		return nil, err
	}
	if o.NativeDir == "" {
		// The library the server finds by its portable name, which
		// 'sfgen build-native' put in its $libdir or in a directory of its
		// dynamic_library_path.
		p.library = native.PortableName(o.SQL.Layout)
		if err := native.Load(ctx, conn, p.library); err != nil {
			return nil, &StepError{Kind: ErrNativeUnavailable, Cause: err, text: func(cause string) string {
				return fmt.Sprintf("the native generator is not available: the database server finds no %s along its dynamic_library_path: %s (run 'sfgen build-native' on the server's machine, which puts it in the server's $libdir, or 'sfgen build-native --native-dir DIR' with DIR in its dynamic_library_path; or install with --native-dir DIR); nothing was changed", p.library, cause)
			}}
		}
		return p, nil
	}
	if p.library, err = native.Build(ctx, NativeDir(o.NativeDir, o.SQL.Layout.String()), o.SQL.Layout); err != nil {
		// The build's output as it is: it has no password, and its lines
		// are the compiler's.
		return nil, &StepError{Kind: ErrNativeUnavailable, Cause: err, text: func(string) string {
			return fmt.Sprintf("the native generator is not available: %s: %v; nothing was changed (without --native, install keeps the SQL generator)", BuildFailure(err), err)
		}}
	}
	// The server must load it from there: try, before anything changes.
	if err := native.Load(ctx, conn, p.library); err != nil {
		return nil, &StepError{Kind: ErrNativeUnavailable, Cause: err, text: func(cause string) string {
			return fmt.Sprintf("the native generator is not available: the database server cannot load %s: %s (is --native-dir on the server's machine, readable by its OS user?); nothing was changed", p.library, cause)
		}}
	}
	// A copy under its portable name beside it, for a dynamic_library_path
	// that names DIR; and where the server finds that name at this very
	// build (DIR is in its path), the function names the library by it,
	// so that a dump restores with the library wherever it is installed.
	if port, err := native.PortableLibrary(p.library, o.NativeDir, o.SQL.Layout); err == nil {
		if found, err := native.ServerFinds(ctx, conn, native.PortableName(o.SQL.Layout)); err == nil && found != "" && sameContent(found, port) {
			p.library = native.PortableName(o.SQL.Layout)
		}
	}
	return p, nil
}

// readSchema reads what schema holds of sfgen (catalog.Inspect). An
// untrusted schema is the install's refusal, said as its trust check says
// it; a schema the role may not use, a *CheckError wrapping ErrPrivilege
// that names its owner (see noUsage).
func readSchema(ctx context.Context, conn *pgx.Conn, schema string) error {
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		return err
	}
	if _, err := catalog.Inspect(ctx, catalog.PGX(conn), s); err != nil {
		if denied := noUsage(ctx, conn, schema, err); denied != nil {
			return denied
		}
		return untrustedCheck(schema, err)
	}
	return nil
}

// noUsage returns, when err is a permission error (SQLSTATE 42501) and the
// connecting role has no USAGE on schema, the error that says so, naming
// the schema's owner and what to do; otherwise nil.
func noUsage(ctx context.Context, conn *pgx.Conn, schema string, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		return nil
	}
	var owner, me string
	var usage bool
	if qerr := conn.QueryRow(ctx, `SELECT n.nspowner::pg_catalog.regrole::pg_catalog.text, CURRENT_USER::pg_catalog.text,
			pg_catalog.has_schema_privilege(n.oid, 'USAGE')
		FROM pg_catalog.pg_namespace n WHERE n.nspname OPERATOR(pg_catalog.=) $1`, schema).Scan(&owner, &me, &usage); qerr != nil || usage {
		return nil
	}
	return &CheckError{Schema: schema, err: ErrPrivilege, Message: fmt.Sprintf(
		"schema %s is owned by role %s, and role %s may not use it (no USAGE privilege on it): install as %s, or into a schema of your own", schema, owner, me, owner)}
}

// sameContent reports whether files a and b hold the same bytes.
func sameContent(a, b string) bool {
	x, err1 := os.ReadFile(a)
	y, err2 := os.ReadFile(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// finish gives the schema, now at the latest release, the generator the
// plan asks for, and says in rep which it has.
func (p *generatorPlan) finish(ctx context.Context, conn *pgx.Conn, schema string, rep *Report) error {
	now, err := native.InstalledLibrary(ctx, conn, schema)
	if err != nil {
		return err
	}
	switch {
	case p.want == Native:
		if err := native.Install(ctx, conn, schema, p.library); err != nil {
			return &StepError{Kind: ErrGeneratorSwitch, Cause: err, text: func(cause string) string {
				return "the native generator could not be installed, and the SQL generator stays: " + cause
			}}
		}
		rep.Generator, rep.Library = ToNative, p.library
	case p.want == SQL && now != "":
		if err := native.Uninstall(ctx, conn, schema); err != nil {
			return &StepError{Kind: ErrGeneratorSwitch, Cause: err, text: func(cause string) string {
				return "switch back to the SQL generator: " + cause
			}}
		}
		rep.Generator, rep.Library = BackToSQL, now
	case p.want == Keep && p.before != "" && now == "":
		// The upgrade put the SQL generator back: the native one again,
		// from the library it used.
		if err := native.Install(ctx, conn, schema, p.before); err != nil {
			return &StepError{Kind: ErrGeneratorSwitch, Cause: err, text: func(cause string) string {
				return fmt.Sprintf("the upgrade replaced the native generator by the SQL one, which stays: installing %s again failed: %s (install with --native to rebuild it, or --native=false to keep SQL)", p.before, cause)
			}}
		}
		rep.Generator, rep.Library = NativeAgain, p.before
	case p.want == Keep && p.shape == native.ShapeC && now != "":
		// The C function itself as snowflake_next_id(), as installs
		// before the wrapper made it: a dump of it does not restore the
		// tables whose defaults call it where the library is missing.
		// The same library, in the wrapper.
		if err := native.Install(ctx, conn, schema, now); err != nil {
			return &StepError{Kind: ErrGeneratorSwitch, Cause: err, text: func(cause string) string {
				return fmt.Sprintf("the native generator in %s stays the C function itself; moving it behind snowflake_next_id() as sfgen now installs it failed: %s (install with --native to rebuild it, or --native=false to switch to SQL)", now, cause)
			}}
		}
		rep.Generator, rep.Library = NativeAgain, now
	}
	return nil
}

// nodeKept checks, before an install into a schema that already has
// sfgen, that node is the node it has: install keeps a schema's node, so
// any other is refused rather than silently not applied. A schema without
// sfgen passes.
func nodeKept(ctx context.Context, db *sql.DB, schema string, node *Node) error {
	in, err := inspect(ctx, db, schema)
	if err != nil {
		return &StepError{Cause: err, text: func(cause string) string {
			return fmt.Sprintf("read the node of schema %s: %s", schema, cause)
		}}
	}
	return keptNode(in, node)
}

// keptNode is nodeKept on what a schema holds, in: Apply runs it again
// under its lock, where no other install can give the schema a node
// between the check and the install.
func keptNode(in catalog.Installed, node *Node) error {
	schema := in.Schema.Name()
	dc, m := in.Node.Datacenter, in.Node.Machine
	switch in.Node.State {
	case catalog.NoNodeFunction:
		return nil
	case catalog.NodeUnset:
		return &StepError{Kind: ErrNodeKept, text: func(string) string {
			return fmt.Sprintf("schema %s already has sfgen, with no node set, and install keeps a schema's node; set it with 'sfgen node --schema %s --datacenter N --machine N'", schema, schema)
		}}
	}
	if wdc, wm := node.over(dc, m); wdc != dc || wm != m {
		return &StepError{Kind: ErrNodeKept, text: func(string) string {
			return fmt.Sprintf("schema %s already has sfgen with node datacenter %d, machine %d, which install keeps; to move it to datacenter %d, machine %d run 'sfgen node --schema %s --datacenter %d --machine %d' (IDs stay unique only if no other database or service makes IDs with that node)",
				schema, dc, m, wdc, wm, schema, wdc, wm)
		}}
	}
	return nil
}

// inspect reads what schema holds of sfgen.
func inspect(ctx context.Context, db *sql.DB, schema string) (catalog.Installed, error) {
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		return catalog.Installed{}, err
	}
	return catalog.Inspect(ctx, catalog.DB(db), s)
}

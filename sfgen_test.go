package sfgen_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/snowflake"
)

// publicAPI is every exported name of package sfgen, methods as
// Type.Method. What only the command needs (the binary breakdown,
// Segments; RangeMessage for the SQL templates; the preset list) is not
// in it.
var publicAPI = []string{
	"Compose", "Decompose", "Discord", "DiscordEpoch",
	"DefaultLeaseTTL", "ErrLeaseClosed", "ErrLeaseLost", "ErrNoFreeNode", "ErrNoLeases",
	"Lease", "Lease.Close", "Lease.Datacenter", "Lease.Done", "Lease.Err", "Lease.FloorAhead", "Lease.Layout", "Lease.Machine", "Lease.Next",
	"LeaseOptions", "TakeLease",
	"ErrInvalidLayout", "ErrNullID", "ErrOutOfRange", "ErrSyntax", "ErrZeroLayout",
	"Field", "FieldDatacenter", "FieldID", "FieldMachine", "FieldSequence", "FieldTimestamp",
	"FirstID", "Generator", "Generator.Layout", "Generator.Next",
	"ID", "ID.Int64", "ID.MarshalJSON", "ID.MarshalText", "ID.Scan", "ID.String", "ID.UnmarshalJSON", "ID.UnmarshalText", "ID.Value",
	"ID.Time", "ID.Datacenter", "ID.Machine", "ID.Sequence",
	"Install", "InstallOptions", "InstallResult", "Check", "GooseMigration", "DBError", "Node", "Release",
	"SchemaError", "SchemaError.Error", "SchemaError.Unwrap",
	"ErrNotInstalled", "ErrOlderRelease", "ErrNewerRelease", "ErrLayoutMismatch", "ErrNoNode", "ErrForeignObject", "ErrUntrustedSchema",
	"LastID", "Layout", "Layout.Bits", "Layout.Compose", "Layout.Decompose", "Layout.Epoch", "Layout.FirstID", "Layout.IsZero", "Layout.LastID",
	"Layout.MarshalText", "Layout.Max", "Layout.MaxTime", "Layout.Min", "Layout.MinTime", "Layout.Name", "Layout.NewGenerator", "Layout.Shift",
	"Layout.String", "Layout.UnmarshalText", "LayoutError", "NewGenerator", "NewLayout",
	"NullID", "NullID.MarshalJSON", "NullID.Scan", "NullID.UnmarshalJSON", "NullID.Value",
	"ParseError", "ParseID", "ParseLayout", "Parts", "Parts.Time", "RangeError", "Twitter", "TwitterEpoch",
}

// TestPublicAPI lists the package's exported names from its source, so
// that anything added to or dropped from the public API shows here.
func TestPublicAPI(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var got []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				name := d.Name.Name
				if d.Recv != nil {
					typ := d.Recv.List[0].Type
					if s, ok := typ.(*ast.StarExpr); ok {
						typ = s.X
					}
					name = typ.(*ast.Ident).Name + "." + name
				}
				got = append(got, name)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							got = append(got, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								got = append(got, n.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(got)
	want := slices.Clone(publicAPI)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("exported names:\n%s\nwant:\n%s", strings.Join(got, " "), strings.Join(want, " "))
	}
}

// cliOnly are the internal/snowflake methods that stay out of the public
// API: the command's binary breakdown, and what Lease uses of a generator
// (a lease's floor and limit, and its stop).
var cliOnly = []string{"Binary", "Segments", "NewGeneratorWithin", "SetLimit", "Stop"}

// TestMirrorsInternal checks that every method of internal/snowflake's
// types (but cliOnly) has its twin in this package, with the same
// signature, the public types in place of the internal ones; so a method
// added there is not forgotten here.
func TestMirrorsInternal(t *testing.T) {
	public := func(typ reflect.Type) string {
		return strings.ReplaceAll(typ.String(), "snowflake.", "sfgen.")
	}
	for _, p := range []struct{ internal, public reflect.Type }{
		{reflect.TypeFor[*snowflake.Layout](), reflect.TypeFor[*sfgen.Layout]()},
		{reflect.TypeFor[*snowflake.ID](), reflect.TypeFor[*sfgen.ID]()},
		{reflect.TypeFor[*snowflake.NullID](), reflect.TypeFor[*sfgen.NullID]()},
		{reflect.TypeFor[*snowflake.Generator](), reflect.TypeFor[*sfgen.Generator]()},
		{reflect.TypeFor[*snowflake.Parts](), reflect.TypeFor[*sfgen.Parts]()},
	} {
		for i := range p.internal.NumMethod() {
			m := p.internal.Method(i)
			if slices.Contains(cliOnly, m.Name) {
				if _, ok := p.public.MethodByName(m.Name); ok {
					t.Errorf("%s.%s is for the command only, but the public %s has it", p.internal, m.Name, p.public)
				}
				continue
			}
			pm, ok := p.public.MethodByName(m.Name)
			if !ok {
				t.Errorf("%s has no method %s, which %s has", p.public, m.Name, p.internal)
				continue
			}
			if got, want := public(pm.Type), public(m.Type); got != want {
				t.Errorf("%s.%s is %s, want %s", p.public, m.Name, got, want)
			}
		}
		if p.public.NumMethod() != p.internal.NumMethod()-countCLIOnly(p.internal) {
			t.Errorf("%s has %d methods, %s %d (%d for the command only)", p.public, p.public.NumMethod(), p.internal, p.internal.NumMethod(), countCLIOnly(p.internal))
		}
		// The structs with exported fields have the same ones.
		if e := p.internal.Elem(); e.Kind() == reflect.Struct {
			for i := range e.NumField() {
				if f := e.Field(i); f.IsExported() {
					pf, ok := p.public.Elem().FieldByName(f.Name)
					if !ok || public(pf.Type) != public(f.Type) {
						t.Errorf("%s.%s: the public %s has %v", e, f.Name, p.public.Elem(), pf.Type)
					}
				}
			}
		}
	}
	if sfgen.TwitterEpoch != snowflake.TwitterEpoch || sfgen.DiscordEpoch != snowflake.DiscordEpoch {
		t.Errorf("epochs %d, %d; internal/snowflake has %d, %d", sfgen.TwitterEpoch, sfgen.DiscordEpoch, snowflake.TwitterEpoch, snowflake.DiscordEpoch)
	}
}

func countCLIOnly(typ reflect.Type) int {
	n := 0
	for _, name := range cliOnly {
		if _, ok := typ.MethodByName(name); ok {
			n++
		}
	}
	return n
}

// TestPresets: Twitter and Discord are the internal presets, by value;
// the values handed out are copies, so an importer changing its copy (by
// UnmarshalText, say) changes no one else's.
func TestPresets(t *testing.T) {
	if sfgen.Twitter().String() != snowflake.Twitter.String() || sfgen.Discord().String() != snowflake.Discord.String() {
		t.Errorf("presets %v, %v; internal/snowflake has %v, %v", sfgen.Twitter(), sfgen.Discord(), snowflake.Twitter, snowflake.Discord)
	}
	for _, name := range []string{"twitter", "discord"} {
		l, err := sfgen.ParseLayout(name)
		want := map[string]sfgen.Layout{"twitter": sfgen.Twitter(), "discord": sfgen.Discord()}[name]
		if err != nil || l != want {
			t.Errorf("ParseLayout(%q) = %v, %v; want %v", name, l, err, want)
		}
	}
	l := sfgen.Twitter()
	if err := l.UnmarshalText([]byte("discord")); err != nil {
		t.Fatal(err)
	}
	if sfgen.Twitter() == l || sfgen.Twitter().Epoch() != sfgen.TwitterEpoch {
		t.Errorf("changing a copy of Twitter() changed Twitter() to %v", sfgen.Twitter())
	}
	if sfgen.Twitter() == sfgen.Discord() {
		t.Error("Twitter() == Discord()")
	}
	// The package-level functions are Twitter's.
	for _, in := range [][4]int64{{1288834975657, 1, 1, 0}, {1288834974657 - 1, 0, 0, 0}} {
		a, errA := sfgen.Compose(in[0], in[1], in[2], in[3])
		b, errB := sfgen.Twitter().Compose(in[0], in[1], in[2], in[3])
		if a != b || (errA == nil) != (errB == nil) {
			t.Errorf("Compose(%v) = %d, %v; Twitter().Compose = %d, %v", in, a, errA, b, errB)
		}
	}
}

// TestDiscordVector: Discord documents 175928847299117063 as
// 2016-04-30T11:18:25.796Z, worker 1, process 0, increment 7.
func TestDiscordVector(t *testing.T) {
	l, err := sfgen.ParseLayout("discord")
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.Decompose(175928847299117063)
	if err != nil || p != (sfgen.Parts{Timestamp: 1462015105796, Datacenter: 1, Machine: 0, Sequence: 7}) {
		t.Errorf("Decompose = %+v, %v; want timestamp 1462015105796, datacenter 1, machine 0, sequence 7", p, err)
	}
	if id, err := l.Compose(1462015105796, 1, 0, 7); err != nil || id != 175928847299117063 {
		t.Errorf("Compose = %d, %v", id, err)
	}
}

// TestZeroValues: the zero Layout and the zero Generator refuse to work,
// with ErrZeroLayout, rather than act as Twitter's.
func TestZeroValues(t *testing.T) {
	var z sfgen.Layout
	errs := map[string]error{}
	_, errs["Compose"] = z.Compose(1288834975657, 1, 1, 0)
	_, errs["Decompose"] = z.Decompose(4194439168)
	_, errs["FirstID"] = z.FirstID(time.Now())
	_, errs["LastID"] = z.LastID(time.Now())
	_, errs["NewGenerator"] = z.NewGenerator(0, 0)
	_, errs["MarshalText"] = z.MarshalText()
	var g sfgen.Generator
	_, errs["Generator.Next"] = g.Next()
	for call, err := range errs {
		if !errors.Is(err, sfgen.ErrZeroLayout) || !errors.Is(err, sfgen.ErrInvalidLayout) {
			t.Errorf("%s on the zero value: error = %v, want ErrZeroLayout", call, err)
		}
	}
	if g.Layout() != (sfgen.Layout{}) {
		t.Errorf("zero Generator's Layout() = %v", g.Layout())
	}
	if gen, err := sfgen.Discord().NewGenerator(1, 2); err != nil || gen.Layout() != sfgen.Discord() {
		t.Errorf("Discord().NewGenerator(1, 2).Layout() = %v, %v", gen, err)
	}
}

// TestErrorsAreTheInternalOnes: errors.As and errors.Is with the public
// names match what the implementation returns.
func TestErrorsAreTheInternalOnes(t *testing.T) {
	_, err := sfgen.Compose(0, 0, 0, 0)
	var re *sfgen.RangeError
	if !errors.As(err, &re) || re.Field != sfgen.FieldTimestamp || !errors.Is(err, sfgen.ErrOutOfRange) {
		t.Errorf("Compose(0, ...) error = %v (%T)", err, err)
	}
	_, err = sfgen.ParseID("x")
	var pe *sfgen.ParseError
	if !errors.As(err, &pe) || !errors.Is(err, sfgen.ErrSyntax) {
		t.Errorf("ParseID(x) error = %v (%T)", err, err)
	}
	_, err = sfgen.ParseLayout("x=1")
	var le *sfgen.LayoutError
	if !errors.As(err, &le) || le.Part != "x" || !errors.Is(err, sfgen.ErrInvalidLayout) {
		t.Errorf("ParseLayout(x=1) error = %v (%T)", err, err)
	}
	var id sfgen.ID
	if err := id.Scan(nil); !errors.Is(err, sfgen.ErrNullID) {
		t.Errorf("Scan(nil) error = %v", err)
	}
}

func TestGeneratorAllocs(t *testing.T) {
	g, err := sfgen.NewGenerator(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := g.Next(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Next allocates %v times a call", n)
	}
}

// TestGeneratorNode: the public generator's IDs carry its node and
// increase.
func TestGeneratorNode(t *testing.T) {
	l, err := sfgen.NewLayout(0, 43, 4, 4, 12)
	if err != nil {
		t.Fatal(err)
	}
	g, err := l.NewGenerator(15, 3)
	if err != nil {
		t.Fatal(err)
	}
	var last sfgen.ID = -1
	for range 10000 {
		id, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		p, _ := l.Decompose(id)
		if id <= last || p.Datacenter != 15 || p.Machine != 3 {
			t.Fatalf("Next() = %d (%+v) after %d", id, p, last)
		}
		last = id
	}
	if _, err := l.NewGenerator(16, 0); !errors.Is(err, sfgen.ErrOutOfRange) {
		t.Errorf("NewGenerator(16, 0) error = %v, want ErrOutOfRange", err)
	}
	if p, _ := l.Decompose(last); time.Since(p.Time()).Abs() > time.Minute {
		t.Errorf("the last ID is dated %s, not now", p.Time())
	}
	if math.MaxInt64 != l.Max(sfgen.FieldID) {
		t.Errorf("Max(FieldID) = %d", l.Max(sfgen.FieldID))
	}
}

// TestDependencies: importing sfgen brings in the standard library, pgx
// and goose (Install applies the release line with goose over pgx, and
// GooseMigration returns a *goose.Migration) with what they import, and
// of its own module the packages Install runs, whatever the command and
// the tests use.
func TestDependencies(t *testing.T) {
	out, err := exec.Command(goTool(t), "list", "-deps", "-f", "{{if not .Standard}}{{.Module.Path}} {{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	modules := []string{"github.com/jackc/pgx/v5", "github.com/jackc/pgpassfile", "github.com/jackc/pgservicefile",
		"github.com/pressly/goose/v3", "github.com/mfridman/interpolate", "github.com/sethvargo/go-retry",
		"go.uber.org/multierr", "golang.org/x/sync", "golang.org/x/text"}
	var own []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		module, path, _ := strings.Cut(line, " ")
		switch {
		case module == "github.com/sfgen/sfgen":
			own = append(own, path)
		case !slices.Contains(modules, module):
			t.Errorf("sfgen depends on %s, of module %s; want only %v", path, module, modules)
		}
	}
	slices.Sort(own)
	want := []string{"github.com/sfgen/sfgen", "github.com/sfgen/sfgen/internal/catalog", "github.com/sfgen/sfgen/internal/install",
		"github.com/sfgen/sfgen/internal/migrationdir", "github.com/sfgen/sfgen/internal/native", "github.com/sfgen/sfgen/internal/pgident", "github.com/sfgen/sfgen/internal/pgmajor",
		"github.com/sfgen/sfgen/internal/snowflake", "github.com/sfgen/sfgen/internal/sqlgen", "github.com/sfgen/sfgen/native"}
	if !slices.Equal(own, want) {
		t.Errorf("sfgen's own dependencies: %v, want %v", own, want)
	}
}

// goTool returns the go command: the one on $PATH, else the toolchain's.
func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no go command on $PATH or in %s", runtime.GOROOT())
	}
	return p
}

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
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sfgen/sfgen"
)

// publicAPI is every exported name of package sfgen, methods as
// Type.Method, errors' methods included. What only the command needs
// (the binary breakdown, the SQL templates' range message, the preset
// list: internal/idkit) and a lease's generator (internal/leasegen) are
// not in it, nor is anything of the database side (package sfgenpg).
var publicAPI = []string{
	"Compose", "Decompose", "Discord", "DiscordEpoch",
	"ErrInvalidLayout", "ErrNullID", "ErrOutOfRange", "ErrSyntax", "ErrZeroLayout",
	"Field", "Field.String", "FieldDatacenter", "FieldID", "FieldMachine", "FieldSequence", "FieldTimestamp",
	"FirstID", "Generator", "Generator.Layout", "Generator.Next",
	"ID", "ID.Int64", "ID.MarshalJSON", "ID.MarshalText", "ID.Scan", "ID.String", "ID.UnmarshalJSON", "ID.UnmarshalText", "ID.Value",
	"ID.Time", "ID.Datacenter", "ID.Machine", "ID.Sequence",
	"LastID", "Layout", "Layout.Bits", "Layout.Compose", "Layout.Decompose", "Layout.Epoch", "Layout.FirstID", "Layout.IsZero", "Layout.LastID",
	"Layout.MarshalText", "Layout.Max", "Layout.MaxTime", "Layout.Min", "Layout.MinTime", "Layout.Name", "Layout.NewGenerator", "Layout.Shift",
	"Layout.String", "Layout.UnmarshalText", "LayoutError", "LayoutError.Error", "LayoutError.Unwrap", "NewGenerator", "NewLayout",
	"NullID", "NullID.MarshalJSON", "NullID.Scan", "NullID.UnmarshalJSON", "NullID.Value",
	"ParseError", "ParseError.Error", "ParseError.Unwrap", "ParseID", "ParseLayout", "Parts", "Parts.Time", "RangeError", "RangeError.Error", "RangeError.Unwrap", "Twitter", "TwitterEpoch",
	// The string forms (encoding.go).
	"Base32", "Base58", "Decode", "Encoding", "Encoding.String", "EncodingError", "EncodingError.Error", "EncodingError.Unwrap", "Encodings",
	"ErrUnknownEncoding", "ID.Base32", "ID.Base58", "ID.Encode", "ParseBase32", "ParseBase58", "ParseEncoding",
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

// TestPresets: Twitter and Discord are the documented presets, by value;
// the values handed out are copies, so an importer changing its copy (by
// UnmarshalText, say) changes no one else's.
func TestPresets(t *testing.T) {
	if sfgen.Twitter().String() != "epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12" ||
		sfgen.Discord().String() != "epoch=1420070400000 timestamp=41 datacenter=5 machine=5 sequence=12" {
		t.Errorf("presets %v, %v", sfgen.Twitter(), sfgen.Discord())
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

// TestErrorTypes: errors.As and errors.Is find the documented error
// types and sentinels in what the functions return.
func TestErrorTypes(t *testing.T) {
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

// TestDependencies: package sfgen imports the standard library alone,
// nothing of its own module (the database side is package sfgenpg) and no
// other module, so that a program that only handles IDs builds none of
// pgx, goose or sfgen's SQL.
func TestDependencies(t *testing.T) {
	out, err := exec.Command(goTool(t), "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if got := strings.Fields(string(out)); !slices.Equal(got, []string{"github.com/sfgen/sfgen"}) {
		t.Errorf("go list -deps: packages outside the standard library: %v; want only github.com/sfgen/sfgen itself", got)
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
		t.Skipf("no go command on $PATH or in %s", runtime.GOROOT())
	}
	return p
}

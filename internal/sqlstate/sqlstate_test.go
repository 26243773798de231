package sqlstate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sfgen/sfgen"
)

// sfCode is an SQLSTATE of sfgen's own class, as the sources spell it.
var sfCode = regexp.MustCompile(`SF[0-9]{3}`)

// TestTableMatchesSources scans the SQL templates (*.tmpl under
// internal/) and the native generator's C source (native/src/*.c, *.h)
// for every SFnnn literal: each must be in the table, and each SF entry
// of the table must be spelled somewhere there.
func TestTableMatchesSources(t *testing.T) {
	root := filepath.Join("..", "..")
	used := map[string][]string{} // code -> files
	scan := func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range sfCode.FindAllString(string(b), -1) {
			rel, _ := filepath.Rel(root, path)
			if files := used[c]; !slices.Contains(files, rel) {
				used[c] = append(files, filepath.ToSlash(rel))
			}
		}
	}
	templates := 0
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".tmpl") {
			templates++
			scan(path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	csrc, err := filepath.Glob(filepath.Join(root, "native", "src", "*.[ch]"))
	if err != nil {
		t.Fatal(err)
	}
	if templates < 20 || len(csrc) < 2 {
		t.Fatalf("scanned %d templates and %d C files; want the module's", templates, len(csrc))
	}
	for _, f := range csrc {
		scan(f)
	}
	for c, files := range used {
		if _, ok := Lookup(c); !ok {
			t.Errorf("SQLSTATE %s, in %v, is not in the table (internal/sqlstate.Codes)", c, files)
		}
	}
	for _, c := range Codes {
		if strings.HasPrefix(c.Code, "SF") && len(used[c.Code]) == 0 {
			t.Errorf("the table's %s (%s) is in no template or C file", c.Code, c.Name)
		}
	}
}

// TestTable: one entry a code, each with its meaning and what raises it,
// and the sentinels that DBError and install documented.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Codes {
		if seen[c.Code] {
			t.Errorf("%s twice in the table", c.Code)
		}
		seen[c.Code] = true
		if c.Name == "" || c.Meaning == "" || c.RaisedBy == "" {
			t.Errorf("%s: %+v; want a name, a meaning and what raises it", c.Code, c)
		}
	}
	for code, want := range map[string]error{
		ForeignObject: ErrForeignObject, LayoutMismatch: ErrLayoutMismatch, NewerRelease: ErrNewerRelease,
		UntrustedSchema: ErrUntrustedSchema, UntrustedOwner: ErrUntrustedSchema, Privilege: ErrPrivilege,
	} {
		if got := Preflight(code); got != want {
			t.Errorf("Preflight(%s) = %v; want %v", code, got, want)
		}
	}
	if got := Preflight(NoNode); got != nil {
		t.Errorf("Preflight(%s) = %v; want nil, the preflight does not raise it", NoNode, got)
	}
	if got := Sentinel(NoNode, ""); got != ErrNoNode {
		t.Errorf("Sentinel(%s) = %v", NoNode, got)
	}
	if got := Sentinel(NoFreeNode, ""); got != ErrNoFreeNode {
		t.Errorf("Sentinel(%s) = %v", NoFreeNode, got)
	}
	if got := Sentinel(ValueOutOfRange, "datacenter 32 out of range [0, 31]"); !errors.Is(got, sfgen.ErrOutOfRange) {
		t.Errorf("Sentinel(22003, sfgen's message) = %v", got)
	}
	if got := Sentinel(ValueOutOfRange, "integer out of range"); got != nil {
		t.Errorf("Sentinel(22003, PostgreSQL's own message) = %v; want nil", got)
	}
	if got := Public(Privilege, ""); got != nil {
		t.Errorf("Public(%s) = %v; want nil, sfgenpg does not export it", Privilege, got)
	}
	if got := Public(NoNode, ""); got != ErrNoNode {
		t.Errorf("Public(%s) = %v", NoNode, got)
	}
	if got := Sentinel("SF999", ""); got != nil {
		t.Errorf("Sentinel(SF999) = %v", got)
	}
}

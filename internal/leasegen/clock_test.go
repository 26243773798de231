package leasegen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetClockForTestsOnlyInTests: no file of the module but a _test.go
// file names SetClockForTests (its declaration aside), so a program built
// from it never reads a clock other than the real one.
func TestSetClockForTestsOnlyInTests(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			if fd, ok := n.(*ast.FuncDecl); ok && fd.Name.Name == "SetClockForTests" && fd.Recv == nil && f.Name.Name == "leasegen" {
				return false // the declaration itself
			}
			if id, ok := n.(*ast.Ident); ok && id.Name == "SetClockForTests" {
				t.Errorf("%s: %s names SetClockForTests outside a test", fset.Position(id.Pos()), filepath.Base(path))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d Go files under %s; want the module's", files, root)
	}
}

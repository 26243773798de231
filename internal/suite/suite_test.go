package suite

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.yaml.in/yaml/v3"
)

// compose is the part of docker-compose.yml the suite depends on.
type compose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		WorkingDir string   `yaml:"working_dir"`
		Volumes    []string `yaml:"volumes"`
	} `yaml:"services"`
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readCompose(t *testing.T) compose {
	t.Helper()
	var c compose
	if err := yaml.Unmarshal([]byte(read(t, "docker-compose.yml")), &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}

// ciTestCommand returns .ci/run's test_command=( … ) array, and fails the
// test unless both of its runs use it.
func ciTestCommand(t *testing.T, ci string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^test_command=\(([^)]*)\)$`).FindStringSubmatch(ci)
	if m == nil {
		t.Fatal(".ci/run: no test_command=( … ) line")
	}
	if n := strings.Count(ci, `"${test_command[@]}"`); n != 2 {
		t.Errorf(`.ci/run runs "${test_command[@]}" %d times, want 2 (throwaway clusters, then as the compose test service)`, n)
	}
	return strings.Fields(m[1])
}

// TestComposeTestServiceIsWhatCIRuns: the compose test service runs the
// README's test command with DATABASE_URL alone, pointing at the compose
// postgres service as its superuser, and .ci/run's second run does the
// same against a server of the same major version, with the server
// binaries hidden.
func TestComposeTestServiceIsWhatCIRuns(t *testing.T) {
	c := readCompose(t)
	ci := read(t, ".ci/run")
	want := ciTestCommand(t, ci)

	test, ok := c.Services["test"]
	if !ok {
		t.Fatal("docker-compose.yml has no test service")
	}
	if strings.Join(test.Command, " ") != strings.Join(want, " ") {
		t.Errorf("compose test command %q, .ci/run runs %q", test.Command, want)
	}
	readme := read(t, "README.md")
	if !strings.Contains(readme, "\n"+strings.Join(want, " ")+" ") {
		t.Errorf("README.md does not give the test command %q", strings.Join(want, " "))
	}

	// The environment: DATABASE_URL and nothing else that would change
	// how the tests find PostgreSQL.
	if len(test.Environment) != 1 {
		t.Errorf("compose test environment %v: want DATABASE_URL alone, as .ci/run's second run", test.Environment)
	}
	url := test.Environment["DATABASE_URL"]
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatalf("compose DATABASE_URL %q: %v", url, err)
	}
	pg, ok := c.Services[cfg.Host]
	if !ok {
		t.Fatalf("compose DATABASE_URL's host %q is not a compose service", cfg.Host)
	}
	if _, ok := test.DependsOn[cfg.Host]; !ok || test.DependsOn[cfg.Host].Condition != "service_healthy" {
		t.Errorf("compose test service does not wait for %s to be healthy", cfg.Host)
	}
	if cfg.User != "postgres" || cfg.Password != pg.Environment["POSTGRES_PASSWORD"] || cfg.Port != 5432 {
		t.Errorf("compose DATABASE_URL logs in as %s:%s on port %d; the %s service has POSTGRES_PASSWORD %q on 5432",
			cfg.User, cfg.Password, cfg.Port, cfg.Host, pg.Environment["POSTGRES_PASSWORD"])
	}
	ciURL := regexp.MustCompile(`(?m)^DATABASE_URL="postgres://([^:]+):([^@]+)@127\.0\.0\.1:\$port/postgres\?sslmode=disable"$`).FindStringSubmatch(ci)
	if ciURL == nil || ciURL[1] != cfg.User || ciURL[2] != cfg.Password {
		t.Errorf(".ci/run's DATABASE_URL %q does not log in as the compose one does (%s:%s)", ciURL, cfg.User, cfg.Password)
	}
	if !strings.Contains(ci, "--auth=scram-sha-256") {
		t.Error(".ci/run's server does not ask for a password, as the compose postgres service does")
	}
	// Only DATABASE_URL reaches the tests: no SFGEN_PG_BIN, and no server
	// binaries.
	if !strings.Contains(ci, `env -u SFGEN_PG_BIN -u PGPASSWORD DATABASE_URL="$DATABASE_URL" "${hide[@]}" "${test_command[@]}"`) {
		t.Error(".ci/run's second run does not run the test command with DATABASE_URL alone, server binaries hidden")
	}
	if !strings.Contains(ci, "mount -t tmpfs -o size=1m sfgen-no-server /usr/lib/postgresql") {
		t.Error(".ci/run does not hide /usr/lib/postgresql from the second run")
	}

	// The server the compose suite runs against is the major CI tests.
	image := strings.TrimPrefix(pg.Image, "postgres:")
	if major := strings.SplitN(image, ".", 2)[0]; major != "15" {
		t.Errorf("compose postgres image %q: CI tests PostgreSQL 15 (Debian's), so the compose suite should too", pg.Image)
	}
	if test.WorkingDir != "/src" || len(test.Volumes) == 0 || !strings.HasPrefix(test.Volumes[0], ".:/src") {
		t.Errorf("compose test service does not run in the checkout: working_dir %q, volumes %q", test.WorkingDir, test.Volumes)
	}
}

// TestComposeGoImageBuildsTheModule: the compose test service's Go image
// is at least the go line of go.mod, so `docker compose run test` does not
// need to download a toolchain.
func TestComposeGoImageBuildsTheModule(t *testing.T) {
	c := readCompose(t)
	image := c.Services["test"].Image
	tag, ok := strings.CutPrefix(image, "golang:")
	if !ok {
		t.Fatalf("compose test image %q is not golang:<version>", image)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)(\.\d+)?$`).FindStringSubmatch(read(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	if !atLeast(strings.SplitN(tag, "-", 2)[0], m[1]) {
		t.Errorf("compose test image %q is older than go.mod's go %s", image, m[1]+m[2])
	}
}

// atLeast reports whether version a (major.minor[.patch]) is at least b.
func atLeast(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range pb {
		if i >= len(pa) {
			return true // "1.26" is the newest 1.26.x
		}
		x, y := num(pa[i]), num(pb[i])
		if x != y {
			return x > y
		}
	}
	return true
}

func num(s string) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return -1
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// minTimeout is the least -timeout the test command may give: Go's
// default of 10 minutes a package killed cmd/sfgen and internal/install
// under -race on 2 cores shared with other work, where they then took
// 1,237 s and 874 s.
const minTimeout = 40 * time.Minute

// timeoutOf returns the value of args' -timeout flag, or "".
func timeoutOf(args []string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "-timeout="); ok {
			return v
		}
		if a == "-timeout" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// TestTestCommandTimeout: the test command sets a -timeout of at least
// minTimeout, CONTRIBUTING.md gives it as the README does, and every other
// run of the whole suite in the README, CONTRIBUTING.md and .ci/run (the
// per-major runs) has the same -timeout; the inner loop (-short) is not a
// run of the whole suite.
func TestTestCommandTimeout(t *testing.T) {
	ci := read(t, ".ci/run")
	want := ciTestCommand(t, ci)
	timeout := timeoutOf(want)
	if d, err := time.ParseDuration(timeout); err != nil || d < minTimeout {
		t.Errorf(".ci/run's test command %q: -timeout %q, want at least %v (Go's default, 10m, is too short on 2 busy cores)", want, timeout, minTimeout)
	}
	if !strings.Contains(read(t, "CONTRIBUTING.md"), "\n"+strings.Join(want, " ")+" ") {
		t.Errorf("CONTRIBUTING.md does not give the test command %q", strings.Join(want, " "))
	}
	for _, name := range []string{"README.md", "CONTRIBUTING.md"} {
		for _, run := range regexp.MustCompile("go test [^\n#`]*\\./\\.\\.\\.").FindAllString(read(t, name), -1) {
			if args := strings.Fields(run); !slices.Contains(args, "-short") && timeoutOf(args) != timeout {
				t.Errorf("%s: %q runs the whole suite without -timeout %s", name, run, timeout)
			}
		}
	}
	majors := 0
	for _, line := range strings.Split(ci, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") || !strings.Contains(line, "go test ") {
			continue
		}
		majors++
		run := line[strings.Index(line, "go test "):]
		if got := timeoutOf(strings.Fields(run)); got != timeout {
			t.Errorf(".ci/run: %q has -timeout %q, want the test command's %q", run, got, timeout)
		}
	}
	if majors < 3 { // test_command=, the refusal run on 14, the suite on the others
		t.Errorf(".ci/run has %d go test lines, want the test command and the per-major runs", majors)
	}
}

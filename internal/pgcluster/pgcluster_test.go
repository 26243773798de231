package pgcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// helperEnv, when set, makes the test binary act as a process that starts
// a cluster, reports it and waits to be killed.
const helperEnv = "SFGEN_PGCLUSTER_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperMain())
	}
	os.Exit(m.Run())
}

func helperMain() int {
	c, err := Start(context.Background())
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Printf("ready %s %d\n", c.dir, c.cmd.Process.Pid)
	time.Sleep(time.Minute) // to be killed long before; Pdeathsig covers a plain exit too
	return 3
}

// needServer skips t when there are no server binaries but DATABASE_URL
// names a server, as in docker-compose.yml's test service, where the other
// packages' tests use that; it fails t when there is neither.
func needServer(t *testing.T) {
	t.Helper()
	if _, err := FindBinDir(""); err != nil {
		if os.Getenv("DATABASE_URL") != "" {
			t.Skipf("DATABASE_URL is set and %v", err)
		}
		t.Fatal(err)
	}
}

func startCluster(t *testing.T, opts ...Option) *Cluster {
	t.Helper()
	needServer(t)
	t0 := time.Now()
	c, err := Start(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster started in %v: %s", time.Since(t0).Round(time.Millisecond), c.DSN())
	t.Cleanup(func() { c.Stop() })
	return c
}

func TestStartConnectStop(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	ctx := context.Background()

	sock := filepath.Join(c.dir, ".s.PGSQL.5432")
	if len(sock) >= 100 {
		t.Errorf("socket path %q is %d bytes, want < 100", sock, len(sock))
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("no socket at %s: %v", sock, err)
	}
	if want := "postgres://postgres@/postgres?host=" + c.dir + "&port=5432&sslmode=disable"; c.DSN() != want {
		t.Errorf("DSN() = %q, want %q", c.DSN(), want)
	}
	if !hasServer(c.BinDir()) {
		t.Errorf("BinDir() = %q has no server binaries", c.BinDir())
	}

	conn, err := pgx.Connect(ctx, c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	var version string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(version, "PostgreSQL ") {
		t.Errorf("version() = %q", version)
	}
	t.Log(version)
	var fsync, maxConn, listen string
	if err := conn.QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('max_connections'), current_setting('listen_addresses')").Scan(&fsync, &maxConn, &listen); err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(maxConn); fsync != "off" || n < 100 || listen != "" {
		t.Errorf("fsync=%s max_connections=%s listen_addresses=%q", fsync, maxConn, listen)
	}
	conn.Close(ctx)

	// psql and pgbench (libpq) accept the same URL.
	if psql := filepath.Join(c.BinDir(), "psql"); isFile(psql) {
		out, err := exec.Command(psql, c.DSN(), "-Atc", "SELECT 6*7").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "42" {
			t.Errorf("psql: %v: %s", err, out)
		}
	}
	if pgbench := filepath.Join(c.BinDir(), "pgbench"); isFile(pgbench) {
		if out, err := exec.Command(pgbench, "-i", "-I", "dt", c.DSN()).CombinedOutput(); err != nil {
			t.Errorf("pgbench: %v: %s", err, out)
		}
	}

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Stop, %s: %v, want it gone", c.dir, err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if err := c.Restart(ctx, false); !errors.Is(err, ErrStopped) {
		t.Errorf("Restart after Stop: %v, want ErrStopped", err)
	}
}

// TestRestart checks both kinds of restart: committed data survives, a
// fast shutdown checkpoints and an immediate one does not (the server
// recovers from WAL), and the caller's settings are kept.
func TestRestart(t *testing.T) {
	t.Parallel()
	c := startCluster(t, WithSetting("work_mem", "7MB"))
	ctx := context.Background()
	query := func(q string) string {
		t.Helper()
		conn, err := pgx.Connect(ctx, c.DSN())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var s string
		if err := conn.QueryRow(ctx, q).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return s
	}
	if conn, err := pgx.Connect(ctx, c.DSN()); err != nil {
		t.Fatal(err)
	} else if _, err := conn.Exec(ctx, "CREATE TABLE kept AS SELECT 42 AS n"); err != nil {
		t.Fatal(err)
	} else {
		conn.Close(ctx)
	}
	for _, tc := range []struct {
		crash    bool
		recovery string // how the log says the start found the data
	}{
		{false, "database system was shut down at"},
		{true, "database system was interrupted"},
	} {
		conn, err := pgx.Connect(ctx, c.DSN())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Restart(ctx, tc.crash); err != nil {
			t.Fatalf("Restart(crash %v): %v", tc.crash, err)
		}
		if err := conn.Ping(ctx); err == nil {
			t.Errorf("Restart(crash %v): a session from before still answers", tc.crash)
		}
		conn.Close(ctx)
		if got := query("SELECT n::text FROM kept"); got != "42" {
			t.Errorf("after Restart(crash %v): kept.n = %s", tc.crash, got)
		}
		if got := query("SELECT current_setting('work_mem')"); got != "7MB" {
			t.Errorf("after Restart(crash %v): work_mem = %s, want the WithSetting 7MB", tc.crash, got)
		}
		log, err := os.ReadFile(c.LogPath())
		if err != nil {
			t.Fatal(err)
		}
		last := string(log)[strings.LastIndex(string(log), "starting PostgreSQL"):]
		if !strings.Contains(last, tc.recovery) {
			t.Errorf("Restart(crash %v): the log since the last start lacks %q:\n%s", tc.crash, tc.recovery, last)
		}
	}
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

func TestNoServer(t *testing.T) {
	bogus := t.TempDir()
	t.Setenv(BinEnv, bogus)
	_, err := Start(context.Background())
	if !errors.Is(err, ErrNoServer) {
		t.Fatalf("Start with %s=%s: %v, want ErrNoServer", BinEnv, bogus, err)
	}
	if !strings.Contains(err.Error(), bogus) || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Errorf("error does not say where it looked and what to do: %v", err)
	}
	t.Log(err)

	_, err = Start(context.Background(), WithBinDir(filepath.Join(bogus, "none")))
	if !errors.Is(err, ErrNoServer) {
		t.Errorf("Start(WithBinDir(bogus)): %v, want ErrNoServer", err)
	}
}

func TestStartFailureQuotesLog(t *testing.T) {
	t.Parallel()
	needServer(t)
	_, err := Start(context.Background(), WithSetting("shared_buffers", "lots"))
	if err == nil {
		t.Fatal("Start succeeded with shared_buffers=lots")
	}
	if !strings.Contains(err.Error(), "shared_buffers") || !strings.Contains(err.Error(), "exited during startup") {
		t.Errorf("error does not quote the log: %v", err)
	}
	t.Log(err)
	m := regexp.MustCompile(`(/\S+)/data/` + logName).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("error does not name the log file: %v", err)
	}
	if _, err := os.Stat(m[1]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed Start left %s behind: %v", m[1], err)
	}
}

// TestDiesWithParent SIGKILLs a process that started a cluster and checks
// that the kernel takes the postmaster, and so its helpers, down with it,
// and that the next sweep removes the directory left behind.
func TestDiesWithParent(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs Linux /proc")
	}
	needServer(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(90 * time.Second):
		t.Fatal("helper did not report a cluster in 90s")
	}
	var dir string
	var pmPid int
	if _, err := fmt.Sscanf(line, "ready %s %d", &dir, &pmPid); err != nil {
		t.Fatalf("helper said %q", line)
	}
	children := childPids(pmPid)
	if !pidExists(pmPid) || len(children) == 0 {
		t.Fatalf("postmaster %d alive=%v with children %v, want alive with children", pmPid, pidExists(pmPid), children)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	t0 := time.Now()
	all := append([]int{pmPid}, children...)
	for deadline := time.Now().Add(10 * time.Second); ; {
		var alive []int
		for _, pid := range all {
			if pidExists(pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after its parent was killed, processes %v of postmaster %d and its children %v are alive", alive, pmPid, children)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("postmaster %d and %d children gone %v after the helper's SIGKILL", pmPid, len(children), time.Since(t0).Round(time.Millisecond))

	// Every Start, in this package's tests or another package's running
	// beside them, sweeps /tmp: another sweep may already have removed the
	// directory, or be removing it as stale reads it (without its marker,
	// a directory is never stale).
	if _, err := os.Stat(dir); err != nil {
		t.Logf("leftover %s already gone (another sweep): %v", dir, err)
	} else if !stale(dir) {
		if _, err := os.Stat(filepath.Join(dir, markerName)); errors.Is(err, os.ErrNotExist) {
			t.Logf("leftover %s being removed by another sweep", dir)
		} else {
			t.Errorf("leftover %s not seen as stale", dir)
		}
	}
	sweep("/tmp")
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after sweep, %s: %v, want it gone", dir, err)
	}
}

// childPids returns the children of pid (Linux 3.5 and later).
func childPids(pid int) []int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

func TestSweepIsConservative(t *testing.T) {
	root := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPid := dead.Process.Pid

	mk := func(name, marker string) string {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		if marker != "" {
			if err := os.WriteFile(filepath.Join(dir, markerName), []byte(marker), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	deadOwner := mk("sfpg1", fmt.Sprintf("sfgen pgcluster\nowner %d\n", deadPid))
	liveOwner := mk("sfpg2", markerText())
	noMarker := mk("sfpg3", "")
	otherMarker := mk("sfpg4", "something else\n")
	reusedPid := mk("sfpg5", fmt.Sprintf("sfgen pgcluster\nowner %d 1\n", os.Getpid())) // our pid, another start time
	livePostmaster := mk("sfpg6", fmt.Sprintf("sfgen pgcluster\nowner %d\n", deadPid))
	if err := os.WriteFile(filepath.Join(livePostmaster, "data", "postmaster.pid"), fmt.Appendf(nil, "%d\n/x\n", os.Getpid()), 0o600); err != nil {
		t.Fatal(err)
	}
	notOurs := mk("other", fmt.Sprintf("sfgen pgcluster\nowner %d\n", deadPid))

	sweep(root)
	for dir, wantGone := range map[string]bool{
		deadOwner: true, liveOwner: false, noMarker: false, otherMarker: false,
		reusedPid: true, livePostmaster: false, notOurs: false,
	} {
		_, err := os.Stat(dir)
		if gone := errors.Is(err, os.ErrNotExist); gone != wantGone {
			t.Errorf("%s: gone=%v, want %v", filepath.Base(dir), gone, wantGone)
		}
	}
}

// TestSettingsFromEnv: $SFGEN_PG_SETTINGS' settings reach the server,
// after the package's own (max_connections=100) and before WithSetting's;
// one that is not name=value fails Start, naming it.
func TestSettingsFromEnv(t *testing.T) {
	ctx := context.Background()
	t.Setenv(SettingsEnv, "max_connections=123  work_mem=5MB")
	show := func(c *Cluster) string {
		t.Helper()
		conn, err := pgx.Connect(ctx, c.DSN())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var maxConn, workMem string
		if err := conn.QueryRow(ctx, "SELECT current_setting('max_connections'), current_setting('work_mem')").Scan(&maxConn, &workMem); err != nil {
			t.Fatal(err)
		}
		return maxConn + " " + workMem
	}
	if got := show(startCluster(t)); got != "123 5MB" {
		t.Errorf("with $%s: max_connections, work_mem = %s; want 123 5MB", SettingsEnv, got)
	}
	if got := show(startCluster(t, WithSetting("max_connections", "77"))); got != "77 5MB" {
		t.Errorf("with $%s and WithSetting: max_connections, work_mem = %s; want 77 5MB", SettingsEnv, got)
	}
	needServer(t)
	t.Setenv(SettingsEnv, "max_connections=123 work mem")
	c, err := Start(ctx)
	if err == nil {
		c.Stop()
	}
	if err == nil || !strings.Contains(err.Error(), `"work" is not name=value`) {
		t.Errorf("Start with $%s=%q: %v; want it refused, naming \"work\"", SettingsEnv, os.Getenv(SettingsEnv), err)
	}
}

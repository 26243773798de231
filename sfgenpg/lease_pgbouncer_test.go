package sfgenpg_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/sfgenpg"
)

// startPgbouncer starts a pgbouncer in transaction pooling mode, with two
// server connections, in front of the database dsn names, and returns a
// DSN for it. It skips when there is no pgbouncer, except in CI
// (CI=true), which installs it.
func startPgbouncer(t *testing.T, dsn string) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		for _, p := range []string{"/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"} {
			if _, serr := os.Stat(p); serr == nil {
				bin, err = p, nil
			}
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no pgbouncer, which CI installs (.ci/run): apt-get install pgbouncer")
		}
		t.Skip("no pgbouncer on this machine (apt-get install pgbouncer); the lease-through-pgbouncer test needs one")
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "sfgen-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	server := fmt.Sprintf("host=%s port=%d dbname=%s user=%s", cfg.Host, cfg.Port, cfg.Database, cfg.User)
	if cfg.Password != "" {
		server += " password=" + cfg.Password
	}
	ini := fmt.Sprintf(`[databases]
leases = %s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = 2
max_client_conn = 50
logfile = %s
pidfile = %s
ignore_startup_parameters = extra_float_digits,options,search_path
`, server, port, filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"))
	path := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(path, []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
	// -q: log to the file only. pgbouncer refuses to run as root.
	args := []string{bin, "-q", path}
	if os.Geteuid() == 0 {
		for _, p := range []string{dir, path} {
			if err := exec.Command("chown", "postgres", p).Run(); err != nil {
				t.Fatalf("chown %s postgres: %v", p, err)
			}
		}
		args = append([]string{"runuser", "-u", "postgres", "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // runuser's child too
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if time.Since(start) > 10*time.Second {
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			t.Fatalf("pgbouncer did not listen on port %d within 10 s:\n%s", port, log)
		}
	}
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/leases?sslmode=disable&default_query_exec_mode=exec", cfg.User, port)
}

// TestLeasesThroughPgbouncer: leases work through a transaction-pooling
// pgbouncer, where every statement may run on another server
// connection: six leases share two server connections, renew through
// them for several TTLs, keep making IDs, and give their nodes back.
func TestLeasesThroughPgbouncer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts pgbouncer: long; run without -short")
	}
	dsn := pgtest.DSN(t)
	direct := leaseDB(t, dsn, "public", sfgen.Twitter(), node{0, 0})
	pooled, err := sql.Open("pgx", startPgbouncer(t, dsn))
	if err != nil {
		t.Fatal(err)
	}
	defer pooled.Close()
	ctx := context.Background()
	// The pool is a real transaction pool: ten client connections, each
	// holding its own connection open, run on two server backends.
	pooled.SetMaxOpenConns(10)
	pids := map[int]bool{}
	var mu sync.Mutex
	var hold sync.WaitGroup
	for range 10 {
		hold.Go(func() {
			c, err := pooled.Conn(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			for range 20 {
				var pid int
				if err := c.QueryRowContext(ctx, "SELECT pg_catalog.pg_backend_pid()").Scan(&pid); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				pids[pid] = true
				mu.Unlock()
			}
		})
	}
	hold.Wait()
	if len(pids) > 2 {
		t.Fatalf("10 client connections ran on %d server backends; want at most pgbouncer's 2", len(pids))
	}
	var leases []*sfgenpg.Lease
	seen := map[node]bool{{0, 0}: true}
	for range 6 {
		l, err := sfgenpg.TakeLease(ctx, pooled, sfgenpg.LeaseOptions{TTL: time.Second, Holder: "pooled"})
		if err != nil {
			t.Fatalf("TakeLease through pgbouncer: %v", err)
		}
		n := node{l.Datacenter(), l.Machine()}
		if seen[n] {
			t.Fatalf("node %s leased twice", n)
		}
		seen[n] = true
		leases = append(leases, l)
	}
	// Several TTLs of renewals, every one of them through the pool.
	var wg sync.WaitGroup
	for _, l := range leases {
		wg.Go(func() {
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				if _, err := l.Next(); err != nil {
					t.Errorf("node %d/%d: %v", l.Datacenter(), l.Machine(), err)
					return
				}
			}
		})
	}
	wg.Wait()
	var renewed int
	if err := direct.QueryRow(`SELECT count(*) FROM ` + leaseTable("public") + ` WHERE holder = 'pooled'
		AND expires_at > taken_at + interval '2 s'`).Scan(&renewed); err != nil || renewed != len(leases) {
		t.Errorf("%d of %d leases renewed past two TTLs (%v)", renewed, len(leases), err)
	}
	for _, l := range leases {
		if err := l.Close(ctx); err != nil {
			t.Errorf("Close through pgbouncer: %v", err)
		}
	}
	// Given back, their nodes are free at once: no lease holds one, live
	// or expired less than a TTL ago, in the database's node registry.
	var live int
	if err := direct.QueryRow(`SELECT count(*) FROM public.snowflake_nodes_held() WHERE kind = 'lease'`).Scan(&live); err != nil || live != 0 {
		t.Errorf("%d nodes held by leases after Close (%v); want 0", live, err)
	}
}

package sqlgen_test

// A throwaway PostgreSQL 15 for the snowflake_next_id() tests: one cluster
// per test binary, one database per test.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const pgBin = "/usr/lib/postgresql/15/bin"

type testCluster struct {
	dir  string // holds data/, the socket and log
	cred *syscall.Credential
	err  error
}

var (
	clusterOnce sync.Once
	cluster     testCluster
	dbCounter   atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	if cluster.dir != "" {
		cluster.pgctl("stop", "-m", "immediate")
		os.RemoveAll(cluster.dir)
	}
	os.Exit(code)
}

// run runs a PostgreSQL program as the cluster's OS user.
func (c *testCluster) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(pgBin, name), args...)
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd.CombinedOutput()
}

func (c *testCluster) pgctl(args ...string) error {
	args = append([]string{"-D", filepath.Join(c.dir, "data"), "-l", filepath.Join(c.dir, "log"), "-w"}, args...)
	out, err := c.run("pg_ctl", args...)
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (c *testCluster) start() error {
	if _, err := os.Stat(filepath.Join(pgBin, "postgres")); err != nil {
		return fmt.Errorf("no PostgreSQL 15 in %s: %v", pgBin, err)
	}
	dir, err := os.MkdirTemp("", "sfgen-nextid-")
	if err != nil {
		return err
	}
	c.dir = dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("running as root needs the postgres OS user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return err
		}
	}
	if out, err := c.run("initdb", "-D", filepath.Join(dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync"); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return c.pgctl("start", "-o", "-k "+dir+" -c listen_addresses='' -c fsync=off -c max_connections=60")
}

// restart stops the server (mode fast: a clean shutdown; immediate: a
// crash, recovered from WAL at start) and starts it again.
func (c *testCluster) restart(mode string) error {
	if err := c.pgctl("stop", "-m", mode); err != nil {
		return err
	}
	return c.pgctl("start", "-o", "-k "+c.dir+" -c listen_addresses='' -c fsync=off -c max_connections=60")
}

func (c *testCluster) dsn(db string) string {
	return fmt.Sprintf("host=%s user=postgres dbname=%s sslmode=disable", c.dir, db)
}

// newDB returns the DSN of a new, empty database that is dropped when t ends.
func newDB(t testing.TB) string {
	t.Helper()
	clusterOnce.Do(func() { cluster.err = cluster.start() })
	if cluster.err != nil {
		t.Fatalf("start PostgreSQL: %v", cluster.err)
	}
	name := fmt.Sprintf("nextid_%d", dbCounter.Add(1))
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, cluster.dsn("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if admin, err := pgx.Connect(ctx, cluster.dsn("postgres")); err == nil {
			admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			admin.Close(ctx)
		}
	})
	return cluster.dsn(name)
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }

// Package citustest starts a throwaway Citus cluster for tests: a
// coordinator and workers, each a [pgcluster.Cluster] with Citus loaded,
// the workers added to the coordinator with their metadata synced.
//
// Citus is not in Debian's archive; it is built from source against the
// server the tests run on (docs/citus.md says how). Where the server's
// library directory has no citus.so, [Start] skips the test, naming the
// directory it looked in, unless $SFGEN_CITUS is "required", when it
// fails it: a machine built to run the Citus tests cannot then pass by
// skipping them.
package citustest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sfgen/sfgen/internal/pgcluster"
)

// RequiredEnv names the environment variable that, set to "required",
// turns a missing Citus into a failure instead of a skip.
const RequiredEnv = "SFGEN_CITUS"

// A Cluster is a running Citus coordinator and its workers.
type Cluster struct {
	Coordinator *pgcluster.Cluster
	Workers     []*pgcluster.Cluster
}

// LibDir returns the directory the server in binDir loads libraries
// from: pg_config --pkglibdir when binDir has pg_config, else the lib
// directory beside it (Debian's /usr/lib/postgresql/N/lib).
func LibDir(binDir string) string {
	if out, err := exec.Command(filepath.Join(binDir, "pg_config"), "--pkglibdir").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	return filepath.Join(filepath.Dir(binDir), "lib")
}

// Missing says why no Citus cluster can start on the server binaries
// pgcluster finds, or returns "" when the server has Citus.
func Missing() string {
	bin, err := pgcluster.FindBinDir("")
	if err != nil {
		return err.Error()
	}
	lib := LibDir(bin)
	if _, err := os.Stat(filepath.Join(lib, "citus.so")); err != nil {
		return fmt.Sprintf("Citus is not installed for the server in %s (no citus.so in %s); docs/citus.md says how to build it", bin, lib)
	}
	return ""
}

// Start starts a coordinator and n workers for t, stopped when t ends,
// or skips t (fails it, with $SFGEN_CITUS=required) when the server has
// no Citus.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	if why := Missing(); why != "" {
		if os.Getenv(RequiredEnv) == "required" {
			t.Fatalf("citustest: $%s=required: %s", RequiredEnv, why)
		}
		t.Skipf("citustest: %s", why)
	}
	ctx := context.Background()
	cl := &Cluster{Coordinator: startNode(ctx, t)}
	host, port := cl.Coordinator.Address()
	if err := Exec(ctx, cl.Coordinator.DSN(), fmt.Sprintf("SELECT pg_catalog.citus_set_coordinator_host(%s, %d)", quote(host), port)); err != nil {
		t.Fatalf("citustest: %v", err)
	}
	for range n {
		cl.AddWorker(t)
	}
	return cl
}

// AddWorker starts one more worker for t and adds it to the cluster
// (citus_add_node, which syncs its metadata and copies the cluster's
// distributed objects to it), as an operator adds a node.
func (cl *Cluster) AddWorker(t testing.TB) *pgcluster.Cluster {
	t.Helper()
	ctx := context.Background()
	w := startNode(ctx, t)
	host, port := w.Address()
	if err := Exec(ctx, cl.Coordinator.DSN(), fmt.Sprintf("SELECT pg_catalog.citus_add_node(%s, %d)", quote(host), port)); err != nil {
		t.Fatalf("citustest: add a worker: %v", err)
	}
	cl.Workers = append(cl.Workers, w)
	return w
}

// startNode starts a server with Citus loaded, stopped when t ends.
func startNode(ctx context.Context, t testing.TB) *pgcluster.Cluster {
	t.Helper()
	c, err := pgcluster.Start(ctx,
		pgcluster.WithSetting("shared_preload_libraries", "citus"),
		pgcluster.WithSetting("max_prepared_transactions", "100"),
		// No telemetry call to Citus' servers.
		pgcluster.WithSetting("citus.enable_statistics_collection", "off"))
	if err != nil {
		t.Fatalf("citustest: start a node: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("citustest: %v", err)
		}
	})
	// Citus reaches its own node at citus.local_hostname, localhost
	// unless told: over TCP, where a pgcluster server does not listen.
	host, _ := c.Address()
	for _, q := range []string{
		"CREATE EXTENSION citus",
		"ALTER SYSTEM SET citus.local_hostname = " + quote(host),
		"SELECT pg_catalog.pg_reload_conf()",
	} {
		if err := Exec(ctx, c.DSN(), q); err != nil {
			t.Fatalf("citustest: %v (server log %s)", err, c.LogPath())
		}
	}
	return c
}

// Exec runs sql on a connection of its own to dsn.
func Exec(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// quote is a string literal of s (a socket directory: no quote in it
// that pgcluster makes, but doubled all the same).
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

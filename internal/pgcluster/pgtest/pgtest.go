// Package pgtest gives tests a PostgreSQL database: the one named by
// $DATABASE_URL, or a fresh one on a throwaway cluster that the test binary
// starts once and shares between its tests.
//
// Use it as
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		dsn := pgtest.DSN(t)
//		...
//	}
//
// With DATABASE_URL set (as docker-compose.yml does), DSN returns it
// unchanged, and tests sharing that database must clean up after
// themselves. Otherwise the first DSN call starts a cluster with
// [pgcluster.Start] and every call creates a database of its own, dropped
// (sessions still open on it included) when the test ends. Where no server
// binaries are found, DSN fails the test with [pgcluster.ErrNoServer]'s
// advice rather than skipping it, so that a missing server never passes as
// green.
//
// Main stops the shared cluster once the tests have run. A binary that does
// not call Main still loses its cluster when it exits, through Pdeathsig,
// but leaves the directory behind for the next [pgcluster.Start] to sweep.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sfgen/sfgen/internal/pgcluster"
)

var (
	mu       sync.Mutex
	shared   *pgcluster.Cluster
	startErr error
	started  bool
	stopped  bool
	seq      atomic.Int64
)

// cluster returns the shared cluster, starting it on first use.
func cluster() (*pgcluster.Cluster, error) {
	mu.Lock()
	defer mu.Unlock()
	if stopped {
		return nil, fmt.Errorf("pgtest: shared cluster already stopped by Main")
	}
	if !started {
		started = true
		shared, startErr = pgcluster.Start(context.Background())
	}
	return shared, startErr
}

// DSN returns the URL of a database for t: $DATABASE_URL if set, else a new
// database on the shared cluster, dropped in t.Cleanup.
func DSN(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	c, err := cluster()
	if err != nil {
		t.Fatalf("pgtest: no PostgreSQL for the test: %v", err)
	}
	name := dbName(t.Name(), seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, err := c.CreateDatabase(ctx, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.DropDatabase(ctx, name); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return dsn
}

// dbName makes a database name, unique in the process, from a test name:
// "t7_testfoo_sub_case", at most 63 bytes.
func dbName(testName string, n int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "t%d_", n)
	for _, r := range strings.ToLower(testName) {
		if b.Len() >= 63 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Main runs the tests and then stops the shared cluster, if one was
// started. It returns m.Run's exit code, for os.Exit.
func Main(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	stopped = true
	c := shared
	mu.Unlock()
	if c != nil {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	return code
}

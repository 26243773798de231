package main

import (
	"errors"
	"os"
	"testing"

	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

// TestMain stops the shared throwaway PostgreSQL that pgtest.DSN starts.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// withoutDatabase clears DATABASE_URL for a test of sfgen's no-database
// mode, which starts a throwaway PostgreSQL of its own. Where there are no
// server binaries that cannot work: it skips t, saying why, when
// DATABASE_URL is set (the tests that need only a database run on it),
// and otherwise lets t run and fail, as pgtest does, so that a missing
// server never passes as green.
func withoutDatabase(t *testing.T) {
	t.Helper()
	if _, err := pgcluster.FindBinDir(""); errors.Is(err, pgcluster.ErrNoServer) && pgtest.External() {
		t.Skipf("sfgen's no-database mode starts a PostgreSQL of its own, and there are no server binaries here: %v", err)
	}
	t.Setenv("DATABASE_URL", "")
}

package convert_test

import (
	"os"
	"testing"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

// TestMain stops the shared throwaway PostgreSQL that pgtest.DSN starts
// when $DATABASE_URL is not set.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

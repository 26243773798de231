package sqlgen_test

import (
	"os"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen/generatortest"
)

// TestMain stops the shared throwaway PostgreSQL that pgtest.DSN starts
// when $DATABASE_URL is not set.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The database helpers of every generator's tests, written once in
// generatortest.
var (
	connect       = generatortest.Connect
	installScript = generatortest.InstallScript
	mustExec      = generatortest.MustExec
	queryInt      = generatortest.QueryInt
	nowMs         = generatortest.NowMs
)

var tw = snowflake.Twitter()

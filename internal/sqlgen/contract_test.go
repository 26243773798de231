package sqlgen_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/generatortest"
)

// sqlGenerator is the SQL generator, as sfgen's plain script installs it.
var sqlGenerator = generatortest.Generator{
	Name:      "the SQL generator",
	Language:  "sql",
	Install:   func(t *testing.T, conn *pgx.Conn, o sqlgen.Options) { installScript(t, conn, o) },
	SlowCalls: slowCalls,
}

// TestGeneratorContract: the guarantees of snowflake_next_id()
// (docs/generator.md), one subtest a scenario, against the SQL generator.
func TestGeneratorContract(t *testing.T) { generatortest.Run(t, sqlGenerator) }

// slowCalls is how many times this transaction has called the slow path,
// snowflake_next_state(): it turns on counting PL/pgSQL calls for the
// rest of the transaction (SET LOCAL track_functions), so the first
// reading of a transaction is 0.
func slowCalls(t testing.TB, conn *pgx.Conn) int64 {
	t.Helper()
	mustExec(t, conn, "SET LOCAL track_functions = 'pl'")
	return queryInt(t, conn, "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_xact_user_functions WHERE funcname = 'snowflake_next_state'")
}

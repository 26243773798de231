package native_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/generatortest"
)

// nativeGenerator is the C function, built for the layout and installed
// over the SQL generator's snowflake_next_id(), which is then the
// LANGUAGE sql wrapper over it (installNative checks the shape, slowCalls
// the library).
var nativeGenerator = generatortest.Generator{
	Name:     "the native generator",
	Language: "sql",
	Install: func(t *testing.T, conn *pgx.Conn, o sqlgen.Options) {
		t.Helper()
		installNative(t, conn, o, library(t, o.Layout), false)
	},
	SlowCalls: slowCalls,
}

// TestGeneratorContract: the guarantees of snowflake_next_id()
// (docs/generator.md), one subtest a scenario, against the native
// generator.
func TestGeneratorContract(t *testing.T) { generatortest.Run(t, nativeGenerator) }

// slowCalls is how many calls of conn's backend have taken the slow path
// (the C twin of snowflake_next_state()), as the library's
// sfgen_native_slow_calls() counts them, created in pg_temp from the
// library public.snowflake_next_id() is made by.
func slowCalls(t testing.TB, conn *pgx.Conn) int64 {
	t.Helper()
	lib, err := native.InstalledLibrary(context.Background(), conn, "public")
	if err != nil || lib == "" {
		t.Fatalf("the native library of public.snowflake_next_id(): %q, %v", lib, err)
	}
	mustExec(t, conn, "CREATE OR REPLACE FUNCTION pg_temp.sfgen_native_slow_calls() RETURNS bigint LANGUAGE c AS "+pgident.QuoteLiteral(lib)+", 'sfgen_native_slow_calls'")
	return queryInt(t, conn, "SELECT pg_temp.sfgen_native_slow_calls()")
}

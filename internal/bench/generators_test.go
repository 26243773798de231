package bench

import (
	"strings"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestGeneratorsOf: on a schema whose snowflake_next_id() is SQL, the
// native variant is snowflake_next_id_native() beside it; where it is the
// native generator, that is the native variant, and the SQL one is the
// release's expression, which reads the state and calls no
// snowflake_next_id().
func TestGeneratorsOf(t *testing.T) {
	expr, err := sqlgen.NextIDExpression(sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids"})
	if err != nil {
		t.Fatal(err)
	}
	sqlSide := generatorsOf(`"ids"`, native.Generator{Shape: native.ShapeSQL}, expr)
	if sqlSide.sql != `"ids".snowflake_next_id()` || sqlSide.native != `"ids".snowflake_next_id_native()` || sqlSide.sqlName != "snowflake_next_id" {
		t.Errorf("on an SQL schema: %+v", sqlSide)
	}
	nativeSide := generatorsOf(`"ids"`, native.Generator{Shape: native.ShapeWrapped, Library: "sfgen_native_x"}, expr)
	if nativeSide.native != `"ids".snowflake_next_id()` || nativeSide.sql != expr || nativeSide.sqlName == nativeSide.nativeName {
		t.Errorf("on a native schema: %+v", nativeSide)
	}
	for _, want := range []string{`pg_catalog.nextval('"ids".snowflake_state'`, `pg_catalog.pg_sequence_last_value('"ids".snowflake_caught_up'`, `"ids".snowflake_next_state()`, `"ids".snowflake_node_bits()`} {
		if !strings.Contains(expr, want) {
			t.Errorf("the SQL generator's expression lacks %s:\n%s", want, expr)
		}
	}
	if strings.Contains(expr, "snowflake_next_id(") || strings.HasSuffix(expr, ";") {
		t.Errorf("the SQL generator's expression calls snowflake_next_id() or ends a statement:\n%s", expr)
	}
}

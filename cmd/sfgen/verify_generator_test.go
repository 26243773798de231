package main

import (
	"context"
	"encoding/json"
	snowflake "github.com/sfgen/sfgen"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestVerifyGeneratorAhead: after the clock stepped back a minute (the
// state seeded a minute ahead), snowflake_next_id()'s IDs run ahead of the
// clock, as documented: verify passes and says by how much. A look-alike
// that hands every ID out twice fails, naming the guarantees it broke.
func TestVerifyGeneratorAhead(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		plant string // SQL run after the install and the seeding; S is the schema
		code  int
		want  []string // in the report
		json  func(map[string]any) bool
	}{
		{
			name: "a minute ahead",
			code: 0,
			want: []string{"20000 IDs ran ahead of the clock, by up to ", "the clock stepped back or IDs were borrowed", "(documented, not a failure)", "\nok: "},
			// By no more than the minute seeded and a few milliseconds borrowed.
			json: func(g map[string]any) bool {
				ms, _ := g["ahead_ms"].(float64)
				return g["ahead"] == 20000.0 && ms > 0 && ms <= 60005
			},
		},
		{
			name: "duplicates",
			plant: `ALTER FUNCTION S.snowflake_next_id() RENAME TO real_next_id;
			CREATE FUNCTION S.snowflake_next_id() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
			DECLARE pending text := pg_catalog.current_setting('sfgen_test.pending', true); a bigint;
			BEGIN
				IF pending IS NOT NULL AND pending <> '' THEN
					PERFORM pg_catalog.set_config('sfgen_test.pending', '', false);
					RETURN pending::bigint;
				END IF;
				a := S.real_next_id();
				PERFORM pg_catalog.set_config('sfgen_test.pending', a::text, false);
				RETURN a;
			END $$;
			COMMENT ON FUNCTION S.snowflake_next_id() IS '` + "a look-alike. " + `MARKER'`,
			code: 1,
			want: []string{"10000 duplicates", "FAIL: snowflake_next_id() broke a guarantee: duplicates, out of order (above)\n"},
			json: func(g map[string]any) bool { return g["duplicates"] == 10000.0 },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := pgtest.DSN(t)
			schema := installSchema(t, dsn, sqlgen.Options{Layout: snowflake.Twitter()})
			conn, _ := testSchema(t, dsn)
			if _, err := conn.Exec(ctx, "SELECT pg_catalog.setval('"+schema+".snowflake_state', (pg_catalog.floor(pg_catalog.extract('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint + 60000) << 12)"); err != nil {
				t.Fatal(err)
			}
			if tc.plant != "" {
				if _, err := conn.Exec(ctx, strings.NewReplacer("S.", schema+".", "MARKER", catalog.ReleaseMarker(sqlgen.Latest)).Replace(tc.plant)); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errOut := sfgen(t, "verify", "--dsn", dsn, "--schema", schema, "--count", "100")
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("report lacks %q:\n%s", w, out)
				}
			}
			code, out, _ = sfgen(t, "verify", "--dsn", dsn, "--schema", schema, "--count", "100", "--json")
			var rep struct {
				OK        bool           `json:"ok"`
				Generator map[string]any `json:"generator"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || code != tc.code || rep.OK != (tc.code == 0) || !tc.json(rep.Generator) {
				t.Errorf("--json: exit %d, %v, %s", code, err, out)
			}
		})
	}
}

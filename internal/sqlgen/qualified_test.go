package sqlgen_test

import (
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlcheck"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestRenderedSQLIsQualified checks that the SQL sfgen renders names every
// operator, function, type, collation and relation with pg_catalog or its
// own schema, and avoids the syntax that looks operators up by name, so
// that a caller's search_path cannot redirect any of it (see
// internal/sqlcheck).
func TestRenderedSQLIsQualified(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts sqlgen.Options
	}{
		{"default", sqlgen.Options{}},
		{"ids_3_7", sqlgen.Options{Schema: "ids", Datacenter: 3, Machine: 7}},
	} {
		schema := tc.opts.Schema
		if schema == "" {
			schema = sqlgen.DefaultSchema
		}
		for _, r := range []struct {
			kind   string
			render func(sqlgen.Options) ([]byte, error)
		}{
			{"Script", sqlgen.Script},
			{"Migration", sqlgen.Migration},
			{"Preflight", sqlgen.Preflight},
			// The upgrade's Up only: its Down puts back release 1 as it
			// shipped, unqualified names and all.
			{"Upgrade", func(o sqlgen.Options) ([]byte, error) {
				b, err := sqlgen.Upgrade(o, sqlgen.Latest)
				up, _, _ := strings.Cut(string(b), "-- +goose Down\n")
				return []byte(up), err
			}},
		} {
			t.Run(tc.name+"/"+r.kind, func(t *testing.T) {
				sql, err := r.render(tc.opts)
				if err != nil {
					t.Fatal(err)
				}
				fs := sqlcheck.Check(sql, sqlcheck.Options{OwnSchemas: []string{pgident.Quote(schema)}})
				for _, f := range fs {
					t.Errorf("%s", f)
				}
				if len(fs) > 0 {
					t.Logf("%s(%+v): %d names could resolve through the caller's search_path", r.kind, tc.opts, len(fs))
				}
			})
		}
	}
}

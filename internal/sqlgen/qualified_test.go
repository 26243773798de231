package sqlgen_test

import (
	snowflake "github.com/sfgen/sfgen"
	"testing"

	"github.com/sfgen/sfgen/internal/catalog"
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
	sqlcheck.SkipUnsupported(t)
	for _, tc := range []struct {
		name string
		opts sqlgen.Options
	}{
		{"default", sqlgen.Options{Layout: snowflake.Twitter()}},
		{"ids_3_7", sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 3, Machine: 7}},
	} {
		schema := tc.opts.Schema
		if schema == "" {
			schema = catalog.Public.Name()
		}
		renders := []struct {
			kind   string
			render func(sqlgen.Options) ([]byte, error)
		}{
			{"Script", sqlgen.Script},
			{"Migration", sqlgen.Migration},
			{"Preflight", sqlgen.Preflight},
			{"Upgrade", sqlgen.Upgrade},
			{"Generator", sqlgen.Generator},
		}
		for _, r := range renders {
			t.Run(tc.name+"/"+r.kind, func(t *testing.T) {
				sql, err := r.render(tc.opts)
				if err != nil {
					t.Fatal(err)
				}
				// Release 4 keeps its leases in a private schema of its own.
				fs := sqlcheck.Check(sql, sqlcheck.Options{OwnSchemas: []string{pgident.Quote(schema), pgident.Quote(catalog.PrivateSchema(schema))}})
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

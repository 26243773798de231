package sqlgen_test

import (
	"fmt"
	"github.com/sfgen/sfgen/internal/snowflake"
	"strings"
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
		{"default", sqlgen.Options{Layout: snowflake.Twitter}},
		{"ids_3_7", sqlgen.Options{Layout: snowflake.Twitter, Schema: "ids", Datacenter: 3, Machine: 7}},
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
		}
		for to := 2; to <= sqlgen.Latest; to++ {
			renders = append(renders, struct {
				kind   string
				render func(sqlgen.Options) ([]byte, error)
			}{fmt.Sprintf("Upgrade(%d)", to), func(o sqlgen.Options) ([]byte, error) {
				b, err := sqlgen.Upgrade(o, to)
				if to == 2 {
					// The Up only: the Down puts back release 1 as it
					// shipped, unqualified names and all.
					up, _, _ := strings.Cut(string(b), "-- +goose Down\n")
					return []byte(up), err
				}
				// Up and Down: the Down puts back a release that was
				// qualified too.
				return b, err
			}})
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

package otherscode

import (
	"testing"

	"github.com/sfgen/sfgen/internal/sqlcheck"
)

// TestQueryQualified: the query binds every operator, function and type
// to pg_catalog, in both its forms.
func TestQueryQualified(t *testing.T) {
	sqlcheck.SkipUnsupported(t)
	for _, tc := range []struct {
		oids       string
		othersOnly bool
	}{{OIDArray([]int64{16384, 16390}), false}, {OIDArray([]int64{16384}), true}, {Tree(16384), false}} {
		othersOnly := tc.othersOnly
		q, err := Query(tc.oids, othersOnly)
		if err != nil {
			t.Fatal(err)
		}
		if f := sqlcheck.Check([]byte(q), sqlcheck.Options{}); len(f) > 0 {
			t.Errorf("othersOnly %v:\n%s\nfindings: %v", othersOnly, q, f)
		}
	}
}

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
		oids string
		o    Options
	}{{OIDArray([]int64{16384, 16390}), Options{}}, {OIDArray([]int64{16384}), Options{NotCurrentRole: true}}, {Tree(16384), Options{ForRead: true}}} {
		q, err := Query(tc.oids, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if f := sqlcheck.Check([]byte(q), sqlcheck.Options{}); len(f) > 0 {
			t.Errorf("%+v:\n%s\nfindings: %v", tc.o, q, f)
		}
	}
}

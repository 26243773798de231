package sfgenpg_test

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// BenchmarkLeaseCalls measures the SQL of a lease's life, one statement
// each, on release 3 and on the latest release side by side: a take and
// the release that gives the node back (release 4's take also reads the
// node registry and locks the layout's lease tables), and a renewal.
//
//	go test -run '^$' -bench LeaseCalls -count 6 .
func BenchmarkLeaseCalls(b *testing.B) {
	for _, release := range []int{3, sqlgen.Latest} {
		db, err := sql.Open("pgx", pgtest.DSN(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		script, err := released.Script(sqlgen.Options{Layout: sfgen.Twitter(), Schema: "public"}, release)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec(string(script)); err != nil {
			b.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		b.Run(fmt.Sprintf("release%d/take+release", release), func(b *testing.B) {
			for b.Loop() {
				var dc, m, token int64
				if err := db.QueryRow("SELECT datacenter_id, machine_id, token FROM public.snowflake_lease_take($1::text, 60000)", "bench").Scan(&dc, &m, &token); err != nil {
					b.Fatal(err)
				}
				if _, err := db.Exec("SELECT public.snowflake_lease_release($1::integer, $2::integer, $3::bigint, 0)", dc, m, token); err != nil {
					b.Fatal(err)
				}
			}
		})
		var dc, m, token int64
		if err := db.QueryRow("SELECT datacenter_id, machine_id, token FROM public.snowflake_lease_take($1::text, 60000)", "bench").Scan(&dc, &m, &token); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("release%d/renew", release), func(b *testing.B) {
			for b.Loop() {
				if _, err := db.Exec("SELECT * FROM public.snowflake_lease_renew($1::integer, $2::integer, $3::bigint, 60000)", dc, m, token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package attack

import (
	"context"
	"fmt"
	"strings"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestUpgradeGateWaitsForOlderTransactions: after an upgrade from release
// 6, a transaction that was in progress when it committed may run release
// 6's code, which takes values from the state without reading release
// 8's guard. While it runs, a due catch-up moves nothing (the state goes
// on by nextval() alone), and snowflake_older_transactions() names it;
// once it ends, the next catch-up moves the state up to the clock again.
// An upgrade from release 7 (whose expression is release 8's) arms no
// such wait.
func TestUpgradeGateWaitsForOlderTransactions(t *testing.T) {
	ctx := context.Background()
	for _, from := range []int{6, 7} {
		t.Run(fmt.Sprintf("from%d", from), func(t *testing.T) {
			e := newEnv(t)
			o := sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 1}
			e.script34(from, o)
			e.exec("CREATE TABLE public.t (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), v int)")
			older := e.connect("")
			older.exec(t, "BEGIN")
			older.exec(t, "INSERT INTO public.t (v) VALUES (0)")
			olderPID := older.pid(t)
			e.script34(sqlgen.Latest, o)

			s := e.connect("")
			state := func() int64 {
				t.Helper()
				var v int64
				if err := s.QueryRowContext(ctx, "SELECT pg_catalog.pg_sequence_last_value('ids.snowflake_state')").Scan(&v); err != nil {
					t.Fatal(err)
				}
				return v
			}
			clockState := func() int64 {
				t.Helper()
				var v int64
				if err := s.QueryRowContext(ctx, "SELECT (floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1000) << 12").Scan(&v); err != nil {
					t.Fatal(err)
				}
				return v
			}
			// The state 10 minutes behind the clock, as after a long pause,
			// and a catch-up due.
			s.exec(t, "SELECT pg_catalog.setval('ids.snowflake_state', (floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 600000) << 12)")
			s.exec(t, "SELECT pg_catalog.setval('ids.snowflake_caught_up', 1)")
			before := state()
			s.exec(t, "INSERT INTO public.t (v) VALUES (1)")
			after := state()
			listed := func() string {
				t.Helper()
				rows, err := s.QueryContext(ctx, "SELECT pid, vxid FROM ids.snowflake_older_transactions()")
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				var b strings.Builder
				for rows.Next() {
					var pid *int
					var vxid string
					if err := rows.Scan(&pid, &vxid); err != nil {
						t.Fatal(err)
					}
					if pid != nil {
						fmt.Fprintf(&b, "pid %d ", *pid)
					}
				}
				return b.String()
			}
			if from == 7 {
				if after < clockState() {
					t.Errorf("from release 7: the catch-up did not move the state up to the clock (%d -> %d)", before, after)
				}
				if l := listed(); l != "" {
					t.Errorf("from release 7: snowflake_older_transactions() lists %q; want none", l)
				}
				return
			}
			if after-before > 4 {
				t.Errorf("a catch-up moved the state from %d to %d while a transaction from before the upgrade runs; want nextval() alone", before, after)
			}
			if l := listed(); !strings.Contains(l, fmt.Sprintf("pid %d ", olderPID)) {
				t.Errorf("snowflake_older_transactions() lists %q; want pid %d", l, olderPID)
			}
			older.exec(t, "COMMIT")
			s.exec(t, "SELECT pg_catalog.setval('ids.snowflake_caught_up', 1)")
			s.exec(t, "INSERT INTO public.t (v) VALUES (2)")
			if got := state(); got < clockState() {
				t.Errorf("after the older transaction ended, the catch-up left the state at %d, behind the clock (%d)", got, clockState())
			}
			if l := listed(); l != "" {
				t.Errorf("after it ended, snowflake_older_transactions() lists %q; want none", l)
			}
		})
	}
}

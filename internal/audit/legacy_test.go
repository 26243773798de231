package audit_test

import (
	"context"
	"testing"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/audit"
)

// TestLegacy: with LegacyBelow, the values below it (a serial's, from
// before a conversion) are counted as legacy and in nothing else, not as
// nodes, times, invalid or future IDs; NULLs stay NULLs; read in one
// statement or in chunks alike.
func TestLegacy(t *testing.T) {
	db := open(t)
	exec(t, db, "CREATE TABLE public.conv (id bigint, at timestamptz)")
	// 3,000 serial values (node 0/0 when read as IDs, dated at
	// the epoch), a negative one from before, and 40 IDs of node 2/3.
	exec(t, db, `INSERT INTO public.conv (id) SELECT g FROM pg_catalog.generate_series(1, 3000) g`)
	now := time.Now()
	first := compose(t, snowflake.Twitter(), now.Add(-time.Minute), 2, 3, 0)
	exec(t, db, `INSERT INTO public.conv (id) SELECT $1::int8 + g FROM pg_catalog.generate_series(0, 39) g`, first)
	insert(t, db, "conv", int64(-1), nil)
	exec(t, db, "VACUUM ANALYZE public.conv")
	defer audit.SetMinChunkPages(1)()
	for _, workers := range []int{1, 3} {
		o := audit.Options{Table: "conv", Layout: snowflake.Twitter(), FutureTolerance: time.Minute, Workers: workers, LegacyBelow: first}
		r, err := audit.Run(context.Background(), db, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Rows != 3042 || r.Legacy != 3001 || r.Nulls != 1 || r.Invalid != 0 || r.Future != 0 || len(r.Nodes) != 1 ||
			r.Nodes[0].Datacenter != 2 || r.Nodes[0].Machine != 3 || r.Nodes[0].Rows != 40 || r.MinTime.Year() < 2020 || !r.Clean() {
			t.Errorf("%d workers: %s", workers, dump(r))
		}
		// Without it, the serial values are IDs of node 0/0 of 2010, and
		// the negative one is invalid.
		o.LegacyBelow = 0
		if r, err = audit.Run(context.Background(), db, o); err != nil || r.Legacy != 0 || len(r.Nodes) != 2 || r.Invalid != 1 {
			t.Errorf("%d workers, no legacy: %v %s", workers, err, dump(r))
		}
	}
}

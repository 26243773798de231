package verify

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/sfgen/sfgen/internal/snowflake"
)

// maxLagMS is how far behind the database clock snowflake_next_id() may
// date an ID: it may use a state up to a few milliseconds old rather than
// take a lock to move it up.
const maxLagMS = 10

// A GeneratorReport is what CheckGenerator found about snowflake_next_id().
type GeneratorReport struct {
	Skipped     string   `json:"skipped,omitempty"` // why the check did not run, if it did not
	Connections int      `json:"connections"`
	IDs         int      `json:"ids"`        // IDs drawn in all
	Datacenter  int64    `json:"datacenter"` // the database's node
	Machine     int64    `json:"machine"`
	Duplicates  int      `json:"duplicates"`   // IDs drawn more than once
	OutOfOrder  int      `json:"out_of_order"` // IDs not above the one before on their connection
	WrongNode   int      `json:"wrong_node"`   // IDs whose node is not the database's
	OutsideRun  int      `json:"outside_run"`  // IDs dated outside the run
	Examples    []string `json:"examples,omitempty"`
}

// OK reports whether the generator passed (or was skipped).
func (g *GeneratorReport) OK() bool {
	return g.Duplicates+g.OutOfOrder+g.WrongNode+g.OutsideRun == 0
}

// CheckGenerator draws perConn IDs from snowflake_next_id() on each of
// conns connections at once and checks, in Go, that they are unique,
// increasing on each connection, carry the node snowflake_node() reports,
// and decode to times inside the run by the database's clock (no more than
// maxLagMS behind its start, and no later than its end plus the
// milliseconds that borrowing could add). A schema without
// snowflake_next_id() (installed by an older sfgen) is skipped, not failed.
func CheckGenerator(ctx context.Context, pool *pgxpool.Pool, schema string, l snowflake.Layout, conns, perConn, keep int) (*GeneratorReport, error) {
	rep := &GeneratorReport{Connections: conns}
	var installed bool
	if err := pool.QueryRow(ctx, "SELECT pg_catalog.to_regprocedure($1) IS NOT NULL AND pg_catalog.to_regprocedure($2) IS NOT NULL",
		schema+".snowflake_next_id()", schema+".snowflake_node()").Scan(&installed); err != nil {
		return nil, fmt.Errorf("look up snowflake_next_id: %w", err)
	}
	if !installed {
		rep.Skipped = "snowflake_next_id() is not installed (installed by an older sfgen?)"
		return rep, nil
	}
	if err := pool.QueryRow(ctx, "SELECT datacenter_id, machine_id FROM "+schema+".snowflake_node()").Scan(&rep.Datacenter, &rep.Machine); err != nil {
		return nil, fmt.Errorf("read the node: %w", err)
	}
	nowMS := "SELECT pg_catalog.floor(pg_catalog.extract('epoch', pg_catalog.clock_timestamp()) OPERATOR(pg_catalog.*) 1000)::bigint"
	var start, end int64
	if err := pool.QueryRow(ctx, nowMS).Scan(&start); err != nil {
		return nil, err
	}
	earliest := start - maxLagMS
	const batch = 1000
	streams := make([][]int64, conns)
	g, gctx := errgroup.WithContext(ctx)
	for c := range conns {
		g.Go(func() error {
			return pool.AcquireFunc(gctx, func(conn *pgxpool.Conn) error {
				for n := 0; n < perConn; n += batch {
					rows, _ := conn.Query(gctx, "SELECT "+schema+".snowflake_next_id() FROM pg_catalog.generate_series(1, $1)", min(batch, perConn-n))
					ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
					if err != nil {
						return fmt.Errorf("snowflake_next_id: %w", err)
					}
					streams[c] = append(streams[c], ids...)
				}
				return nil
			})
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := pool.QueryRow(ctx, nowMS).Scan(&end); err != nil {
		return nil, err
	}

	example := func(format string, args ...any) {
		if len(rep.Examples) < keep {
			rep.Examples = append(rep.Examples, fmt.Sprintf(format, args...))
		}
	}
	perMS := int64(1) << l.Bits(snowflake.FieldSequence)
	var all []int64
	for c, ids := range streams {
		rep.IDs += len(ids)
		all = append(all, ids...)
		for i, id := range ids {
			if i > 0 && id <= ids[i-1] {
				rep.OutOfOrder++
				example("connection %d: %d after %d", c, id, ids[i-1])
			}
		}
	}
	latest := end + (int64(rep.IDs)+perMS-1)/perMS
	for _, id := range all {
		p, err := l.Decompose(snowflake.ID(id))
		if err != nil {
			rep.WrongNode++
			example("%d: %v", id, err)
			continue
		}
		if p.Datacenter != rep.Datacenter || p.Machine != rep.Machine {
			rep.WrongNode++
			example("%d: node %d/%d, database's node is %d/%d", id, p.Datacenter, p.Machine, rep.Datacenter, rep.Machine)
		}
		if p.Timestamp < earliest || p.Timestamp > latest {
			rep.OutsideRun++
			example("%d: dated %s, run was %s to %s (database clock)", id, p.Time().Format(timeFormat), snowflakeTime(start), snowflakeTime(end))
		}
	}
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			rep.Duplicates++
			example("%d drawn twice", all[i])
		}
	}
	return rep, nil
}

func snowflakeTime(ms int64) string {
	return snowflake.Parts{Timestamp: ms}.Time().Format(timeFormat)
}

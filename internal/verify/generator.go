package verify

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
)

// maxLagMS is how far behind the database clock snowflake_next_id() may
// date an ID when the catch-up moves the state right up to the clock: it
// may use a state up to a few milliseconds old (sqlgen.LagLimit, 9 ms,
// and one for the clock's flooring) rather than take a lock to move it up.
const maxLagMS = 10

// backendsSQL is the bound on the backends that can be running
// snowflake_next_id() at once, worked out as every release's catch-up
// works it out (internal/sqlgen/templates, "backends").
const backendsSQL = `SELECT pg_catalog.current_setting('max_connections')::pg_catalog.int8
	OPERATOR(pg_catalog.+) pg_catalog.current_setting('autovacuum_max_workers')::pg_catalog.int8
	OPERATOR(pg_catalog.+) pg_catalog.current_setting('max_worker_processes')::pg_catalog.int8
	OPERATOR(pg_catalog.+) pg_catalog.current_setting('max_wal_senders')::pg_catalog.int8 OPERATOR(pg_catalog.+) 8`

// LagBoundMS is how far behind the clock snowflake_next_id() may date an
// ID, in milliseconds, on a server whose backend bound is backends, in a
// layout with seqBits sequence bits. The catch-up moves the state up to
// the clock only when the clock is more than backends values past it (at
// most one value per backend can be in flight), so it may leave the state
// up to ceil((backends + 1) / 2^seqBits) ms behind, and the fast path then
// uses it for up to maxLagMS more:
//
//	maxLagMS + ceil((backends + 1) / 2^seqBits)
//
// 11 ms for 12 sequence bits at the default 100 connections (backends
// 129), 75 ms for 1 bit; 275 ms for 1 bit at 500 connections.
func LagBoundMS(backends int64, seqBits uint) int64 {
	perMS := int64(1) << seqBits
	return maxLagMS + (backends+1+perMS-1)/perMS
}

// A GeneratorReport is what checkGenerator found about snowflake_next_id().
type GeneratorReport struct {
	Skipped     string `json:"skipped,omitempty"` // why the check did not run, if it did not
	Connections int    `json:"connections"`
	IDs         int    `json:"ids"`        // IDs drawn in all
	Datacenter  int64  `json:"datacenter"` // the database's node
	Machine     int64  `json:"machine"`
	Duplicates  int    `json:"duplicates"`   // IDs drawn more than once
	OutOfOrder  int    `json:"out_of_order"` // IDs not above the one before on their connection
	WrongNode   int    `json:"wrong_node"`   // IDs whose node is not the database's
	// OutsideRun counts IDs dated where neither the clock nor the
	// generator's state puts them: more than LagBoundMS behind the clock at
	// the start, or ahead of the clock at the end and of the state too.
	OutsideRun int `json:"outside_run"`
	// BelowState counts IDs not above the state (the highest ID issued)
	// read before the run: IDs issued before could come again, as they do
	// from a generator that follows a clock stepped back.
	BelowState int `json:"below_state"`
	// Ahead counts IDs dated after the run by the database's clock but
	// within the state (the clock stepped back, or IDs were borrowed from
	// the coming milliseconds): documented, not a failure. AheadMS is how
	// far the latest of them is ahead of the clock at the end of the run.
	Ahead   int   `json:"ahead"`
	AheadMS int64 `json:"ahead_ms"`
	// Backends is the server's bound on the backends that can run
	// snowflake_next_id() at once, and LagBoundMS how far behind the clock
	// that lets an ID be dated in this layout ([LagBoundMS]).
	Backends   int64    `json:"backends"`
	LagBoundMS int64    `json:"lag_bound_ms"`
	Examples   []string `json:"examples,omitempty"`
	// NoState says why the state was not read, if it was not (a schema
	// without snowflake_state, or a role that may not read it): the IDs
	// are then checked against the clock alone, with the milliseconds
	// that borrowing for the IDs drawn could add.
	NoState string `json:"no_state,omitempty"`
	// NoNode says, when the schema has no node set (a first install of
	// release 3 or later without one), that snowflake_next_id() refuses
	// to make IDs, so none were drawn: a failure, until `sfgen node` sets
	// one.
	NoNode string `json:"no_node,omitempty"`
}

// OK reports whether the generator passed (or was skipped). IDs ahead of
// the clock but within the state (Ahead) pass; a schema without a node
// (NoNode) does not.
func (g *GeneratorReport) OK() bool {
	return len(g.Broken()) == 0 && g.NoNode == ""
}

// Broken names the guarantees the generator broke, in the order the
// report lists them: "duplicates", "out of order", "wrong node", "below
// the state", "dated outside the run".
func (g *GeneratorReport) Broken() []string {
	var out []string
	for _, b := range []struct {
		n    int
		name string
	}{
		{g.Duplicates, "duplicates"},
		{g.OutOfOrder, "out of order"},
		{g.WrongNode, "wrong node"},
		{g.BelowState, "below the state"},
		{g.OutsideRun, "dated outside the run"},
	} {
		if b.n > 0 {
			out = append(out, b.name)
		}
	}
	return out
}

// checkGenerator draws perConn IDs from snowflake_next_id() on each of
// conns connections at once and checks, in Go, that they are unique,
// increasing on each connection, carry the node snowflake_node() reports,
// are above the generator's state (snowflake_state: the highest ID issued,
// as (unix_ms << sequence bits) | sequence) read before the run, and are
// dated no more than LagBoundMS behind the database's clock at its start.
// IDs dated after the run's end are fine as long as they are within the
// state read after it: snowflake_next_id() carries on from the highest ID
// issued when the clock steps back, and borrows the coming milliseconds
// past the last sequence number; they are counted in Ahead, with how far
// ahead in AheadMS. Beyond the state, they are dated outside the run.
// Without a readable state, the clock alone bounds them, with the
// milliseconds borrowing for the IDs drawn could add. A schema without
// snowflake_next_id() (installed by an older sfgen) is skipped, not
// failed. in is what Run found in the schema, the node the IDs must carry
// included.
func checkGenerator(ctx context.Context, pool *pgxpool.Pool, in catalog.Installed, l snowflake.Layout, conns, perConn, keep int) (*GeneratorReport, error) {
	rep := &GeneratorReport{Connections: conns}
	if in.Missing(catalog.FuncNextID, catalog.FuncNode) != nil {
		rep.Skipped = "snowflake_next_id() is not installed (installed by an older sfgen?)"
		return rep, nil
	}
	if in.Node.State == catalog.NodeUnset {
		rep.NoNode = "no node is set, so snowflake_next_id() refuses to make IDs"
		return rep, nil
	}
	rep.Datacenter, rep.Machine = in.Node.Datacenter, in.Node.Machine
	schema := in.Schema.Quoted()
	state, err := stateReader(ctx, pool, schema)
	if err != nil {
		return nil, err
	}
	if state == nil {
		rep.NoState = "snowflake_state is missing or not readable by this role"
		state = func() (int64, error) { return -1, nil }
	}
	before, err := state()
	if err != nil {
		return nil, err
	}
	if err := pool.QueryRow(ctx, backendsSQL).Scan(&rep.Backends); err != nil {
		return nil, fmt.Errorf("read the server's backend settings: %w", err)
	}
	nowMS := "SELECT pg_catalog.floor(pg_catalog.extract('epoch', pg_catalog.clock_timestamp()) OPERATOR(pg_catalog.*) 1000)::bigint"
	var start, end int64
	if err := pool.QueryRow(ctx, nowMS).Scan(&start); err != nil {
		return nil, err
	}
	streams, err := drawIDs(ctx, pool, schema, conns, perConn)
	if err != nil {
		return nil, err
	}
	if err := pool.QueryRow(ctx, nowMS).Scan(&end); err != nil {
		return nil, err
	}
	after, err := state()
	if err != nil {
		return nil, err
	}

	rep.judge(streams, l, run{before, after, start, end}, keep)
	return rep, nil
}

// stateReader returns a function that reads snowflake_state's last value,
// or nil when this role cannot read it (or it is missing).
func stateReader(ctx context.Context, pool *pgxpool.Pool, schema string) (func() (int64, error), error) {
	var readable bool
	if err := pool.QueryRow(ctx, `SELECT COALESCE((SELECT pg_catalog.has_sequence_privilege(c.oid, 'SELECT,USAGE')
		FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1) AND c.relkind OPERATOR(pg_catalog.=) 'S'), false)`,
		schema+".snowflake_state").Scan(&readable); err != nil {
		return nil, fmt.Errorf("look up snowflake_state: %w", err)
	}
	if !readable {
		return nil, nil
	}
	return func() (int64, error) {
		var v int64
		err := pool.QueryRow(ctx, "SELECT COALESCE(pg_catalog.pg_sequence_last_value($1::pg_catalog.regclass), -1)", schema+".snowflake_state").Scan(&v)
		if err != nil {
			return 0, fmt.Errorf("read snowflake_state: %w", err)
		}
		return v, nil
	}, nil
}

// drawIDs calls snowflake_next_id() perConn times on each of conns
// connections at once, in batches, and returns each connection's IDs in
// the order it got them.
func drawIDs(ctx context.Context, pool *pgxpool.Pool, schema string, conns, perConn int) ([][]int64, error) {
	const batch = 1000
	streams := make([][]int64, conns)
	g, gctx := errgroup.WithContext(ctx)
	for c := range conns {
		g.Go(func() error {
			return pool.AcquireFunc(gctx, func(conn *pgxpool.Conn) error {
				for n := 0; n < perConn; n += batch {
					rows, _ := conn.Query(gctx, "SELECT "+schema+".snowflake_next_id() FROM pg_catalog.generate_series(1, $1::integer)", min(batch, perConn-n))
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
	return streams, nil
}

// A run is what checkGenerator read around drawing the IDs: the state
// before and after (-1 when it cannot be read), and the database's clock
// at the start and the end, in Unix milliseconds.
type run struct{ before, after, start, end int64 }

// judge counts, in rep, the IDs that break a guarantee (out of order on
// their connection, another node, not above the state before the run,
// dated outside the run and beyond what the state or borrowing accounts
// for, drawn twice) and those ahead of the clock within the state,
// keeping up to keep examples.
func (rep *GeneratorReport) judge(streams [][]int64, l snowflake.Layout, r run, keep int) {
	before, after, start, end := r.before, r.after, r.start, r.end
	rep.LagBoundMS = LagBoundMS(rep.Backends, l.Bits(snowflake.FieldSequence))
	earliest := start - rep.LagBoundMS
	example := func(format string, args ...any) {
		if len(rep.Examples) < keep {
			rep.Examples = append(rep.Examples, fmt.Sprintf(format, args...))
		}
	}
	seqBits := l.Bits(snowflake.FieldSequence)
	perMS := int64(1) << seqBits
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
	// The clock may have stepped back during the run: the start bounds it
	// too. IDs after it need the state after the run (or, without it,
	// borrowing for the IDs drawn) to account for them.
	clock := max(start, end)
	borrowed := clock + (int64(rep.IDs)+perMS-1)/perMS
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
		at := p.Timestamp<<seqBits | p.Sequence // the state that made it
		switch {
		case rep.NoState == "" && at <= before:
			rep.BelowState++
			example("%d: not above the state before the run, %d (%s, sequence %d): IDs issued before can come again", id, before, snowflakeTime(before>>seqBits), before&(perMS-1))
		case p.Timestamp < earliest:
			rep.OutsideRun++
			example("%d: dated %s, more than %d ms (the lag bound at %d backends) before the run, %s to %s (database clock)", id, p.Time().Format(timeFormat), rep.LagBoundMS, rep.Backends, snowflakeTime(start), snowflakeTime(end))
		case p.Timestamp <= clock:
		case rep.NoState == "" && at <= after, rep.NoState != "" && p.Timestamp <= borrowed:
			rep.Ahead++
			rep.AheadMS = max(rep.AheadMS, p.Timestamp-clock)
		default:
			rep.OutsideRun++
			example("%d: dated %s, after the run, %s to %s (database clock), and beyond %s", id, p.Time().Format(timeFormat), snowflakeTime(start), snowflakeTime(end), beyond(rep.NoState == "", after, seqBits))
		}
	}
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			rep.Duplicates++
			example("%d drawn twice", all[i])
		}
	}
}

// beyond says what bounds IDs dated after the run: the state after it,
// or the milliseconds borrowing could add.
func beyond(haveState bool, after int64, seqBits uint) string {
	if haveState {
		return fmt.Sprintf("the state after it, %d (%s, sequence %d)", after, snowflakeTime(after>>seqBits), after&(int64(1)<<seqBits-1))
	}
	return "the milliseconds borrowing the IDs drawn could add"
}

func snowflakeTime(ms int64) string {
	return snowflake.Parts{Timestamp: ms}.Time().Format(timeFormat)
}

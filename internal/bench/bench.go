// Package bench measures snowflake_next_id() against bigserial on a real
// PostgreSQL: concurrent single-row INSERTs into two scratch tables of the
// same shape, one with `id bigserial PRIMARY KEY` and one with
// `id bigint PRIMARY KEY DEFAULT snowflake_next_id()`, in alternating
// rounds (A B B A A B B A ...) so that drift in the machine's speed hits
// both alike.
//
// Each client is one goroutine with its own connection, running one
// prepared INSERT in a loop. Besides the rates, [Run] reports the WAL
// written per row (pg_current_wal_lsn before and after each round), the
// WAL of sequence records per ID when pg_walinspect is available (the
// generator's own WAL, apart from the row's), and how far the time in each
// ID lags the clock_timestamp() that the same row stored.
//
// Run then measures one statement: an INSERT ... SELECT of many rows
// into a fresh table of each shape, the variants alternating from run to
// run, in microseconds per row (what a bulk load pays for its IDs).
//
// The scratch tables get a unique name, live in the generator's schema and
// are dropped when Run returns, however it returns.
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// ErrNoNative is returned by Run with Config.Native when the schema has no
// snowflake_next_id_native().
var ErrNoNative = errors.New("no native generator beside the SQL one")

// The defaults of Config's zero fields, and the limits Normalize checks.
const (
	DefaultClients  = 8
	MaxClients      = 1000
	DefaultDuration = 20 * time.Second
	MaxDuration     = 24 * time.Hour // Duration is at least MinRound
	MaxRounds       = 600
	MinRound        = 100 * time.Millisecond // the shortest round measured
	DefaultRound    = 200 * time.Millisecond // the length of a round when Rounds is 0

	DefaultStatementRows = 100_000    // rows of the one-statement measurement when StatementRows is 0
	MaxStatementRows     = 10_000_000 // the most StatementRows may ask for
	DefaultStatementRuns = 5          // its runs per variant when StatementRuns is 0
	MaxStatementRuns     = 100
)

// Config says what to measure.
type Config struct {
	DSN      string        // the database; snowflake_next_id() must be installed in Schema
	Schema   string        // where snowflake_next_id() is, and where the scratch tables go; "" means public
	Clients  int           // concurrent connections; 0 means DefaultClients
	Duration time.Duration // measured time per variant, split over the rounds; 0 means DefaultDuration
	// Rounds is the number of rounds per variant; 0 means one per
	// DefaultRound of Duration (at least 1, at most 600). Short rounds
	// alternate often, so that the machine's drift (other work, frequency)
	// hits both variants alike: on a 2-core VM, five 20 s runs of one
	// build read 0.914-0.967 in rounds of 1 s, three read 0.919-0.928 in
	// rounds of 200 ms.
	Rounds int
	// SynchronousCommit is the synchronous_commit of the bench sessions;
	// "" means off, so that the commit's fsync does not hide the cost of
	// the ID.
	SynchronousCommit string
	// StatementRows is the size of the one-statement measurement: one
	// INSERT ... SELECT of that many rows into a fresh table per variant
	// and run; 0 means DefaultStatementRows, -1 skips the measurement.
	StatementRows int
	// StatementRuns is how many times each variant's statement runs,
	// alternating with the other's; 0 means DefaultStatementRuns.
	StatementRuns int
	// Native adds a third variant: Schema's snowflake_next_id_native(),
	// the native generator installed beside the SQL one
	// (native.InstallSideBySide), on the same state.
	Native   bool
	Progress io.Writer // progress lines; nil means none
}

// A Variant is one side of the comparison.
type Variant struct {
	Name      string    `json:"name"`      // bigserial, snowflake_next_id or snowflake_next_id_native
	Rows      int64     `json:"rows"`      // rows inserted in the measured rounds
	Seconds   float64   `json:"seconds"`   // measured time
	TPS       float64   `json:"tps"`       // Rows / Seconds
	RoundTPS  []float64 `json:"round_tps"` // each round's rate
	WALBytes  int64     `json:"wal_bytes"` // WAL written in its rounds, all of it
	WALPerRow float64   `json:"wal_per_row"`
	// SeqWALPerID is the WAL of sequence records (nextval, setval) per
	// row: the ID generator's own share of WAL. -1 when pg_walinspect is
	// not available.
	SeqWALPerID float64 `json:"seq_wal_per_id"`
}

// Lag describes how far, in milliseconds, the time in each ID trails the
// clock_timestamp() stored in the same row. The time in an ID is floored
// to the millisecond, so even a perfect generator shows 0 to 1 ms.
type Lag struct {
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Min  float64 `json:"min_ms"` // negative when an ID's time is ahead of its row's clock (borrowed milliseconds)
	Rows int64   `json:"rows"`
}

// Result is what Run measured.
type Result struct {
	Clients           int     `json:"clients"`
	Rounds            int     `json:"rounds"`
	RoundSeconds      float64 `json:"round_seconds"`
	SynchronousCommit string  `json:"synchronous_commit"`
	ServerVersion     string  `json:"server_version"`
	Node              [2]int  `json:"node"` // datacenter, machine of snowflake_next_id()
	Bigserial         Variant `json:"bigserial"`
	Snowflake         Variant `json:"snowflake_next_id"`
	Ratio             float64 `json:"ratio"` // Snowflake.TPS / Bigserial.TPS
	// RoundRatios are the ratios of the two variants' rates in each round,
	// which ran back to back: their spread shows how noisy the machine was.
	RoundRatios []float64 `json:"round_ratios"`
	Lag         Lag       `json:"lag"`
	// Statement is the one-statement measurement; nil when skipped.
	Statement *Statement `json:"statement,omitempty"`
	// With Config.Native: the native generator's variant, its ratio to
	// bigserial, and the ratios round by round.
	Native            *Variant  `json:"snowflake_next_id_native,omitempty"`
	NativeRatio       float64   `json:"native_ratio,omitempty"`
	NativeRoundRatios []float64 `json:"native_round_ratios,omitempty"`
}

// Statement is what one INSERT ... SELECT of Rows rows into a fresh table
// costs per row, in microseconds (the statement's time, as the client
// saw it, over its rows), for each variant, Runs times.
type Statement struct {
	Rows        int       `json:"rows"`
	Runs        int       `json:"runs"`
	BigserialUs []float64 `json:"bigserial_us_per_row"`         // each run's
	SnowflakeUs []float64 `json:"snowflake_next_id_us_per_row"` // each run's
	// The medians of the runs, and the median of each run's difference
	// (snowflake_next_id's minus bigserial's, the two back to back).
	BigserialMedianUs float64 `json:"bigserial_median_us"`
	SnowflakeMedianUs float64 `json:"snowflake_next_id_median_us"`
	ExtraMedianUs     float64 `json:"extra_median_us"`
	// With Config.Native: the native generator's runs, their median, and
	// the median of each run's difference from bigserial's.
	NativeUs            []float64 `json:"snowflake_next_id_native_us_per_row,omitempty"`
	NativeMedianUs      float64   `json:"snowflake_next_id_native_median_us,omitempty"`
	NativeExtraMedianUs float64   `json:"native_extra_median_us,omitempty"`
}

// The variants, in the order of Run's slices: bigserial, the SQL
// generator, and with Config.Native the native one.
const (
	variantBigserial = iota
	variantSQL
	variantNative
)

// idDefault is a variant's id column, in schema (quoted).
func idDefault(v int, schema string) string {
	switch v {
	case variantSQL:
		return "id bigint PRIMARY KEY DEFAULT " + schema + ".snowflake_next_id()"
	case variantNative:
		return "id bigint PRIMARY KEY DEFAULT " + schema + ".snowflake_next_id_native()"
	}
	return "id bigserial PRIMARY KEY"
}

// orders returns the order the n variants run in, round after round: every
// permutation in turn, so that each variant runs first, last and between
// the others equally often.
func orders(n int) [][]int {
	if n == 1 {
		return [][]int{{0}}
	}
	var out [][]int
	for _, rest := range orders(n - 1) {
		for i := 0; i < n; i++ {
			p := append(append(append([]int{}, rest[:i]...), n-1), rest[i:]...)
			out = append(out, p)
		}
	}
	return out
}

// Normalize fills in the defaults of c's zero fields and checks the
// result, with the error that Run would return. A command line calls it to
// tell bad flags from a failed run.
func (c *Config) Normalize() error {
	if c.Schema == "" {
		c.Schema = sqlgen.DefaultSchema
	}
	if err := pgident.ValidateSchema(c.Schema); err != nil {
		return err
	}
	if c.Clients == 0 {
		c.Clients = DefaultClients
	}
	if c.Clients < 1 || c.Clients > MaxClients {
		return fmt.Errorf("clients %d out of range [1, %d]", c.Clients, MaxClients)
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Duration < MinRound || c.Duration > MaxDuration {
		return fmt.Errorf("duration %s out of range [%s, %s]", FormatDuration(c.Duration), FormatDuration(MinRound), FormatDuration(MaxDuration))
	}
	if c.Rounds == 0 {
		c.Rounds = min(max(int(c.Duration/DefaultRound), 1), MaxRounds)
	}
	if c.Rounds < 1 || c.Rounds > MaxRounds {
		return fmt.Errorf("rounds %d out of range [1, %d]", c.Rounds, MaxRounds)
	}
	if c.Duration/time.Duration(c.Rounds) < MinRound {
		return fmt.Errorf("duration %s in %d rounds is too short to measure: want rounds of %s or more", FormatDuration(c.Duration), c.Rounds, FormatDuration(MinRound))
	}
	if c.SynchronousCommit == "" {
		c.SynchronousCommit = "off"
	}
	if c.StatementRows == 0 {
		c.StatementRows = DefaultStatementRows
	}
	if c.StatementRows != -1 && (c.StatementRows < 1 || c.StatementRows > MaxStatementRows) {
		return fmt.Errorf("statement rows %d out of range [1, %d] (or -1: none)", c.StatementRows, MaxStatementRows)
	}
	if c.StatementRuns == 0 {
		c.StatementRuns = DefaultStatementRuns
	}
	if c.StatementRuns < 1 || c.StatementRuns > MaxStatementRuns {
		return fmt.Errorf("statement runs %d out of range [1, %d]", c.StatementRuns, MaxStatementRuns)
	}
	return nil
}

// FormatDuration writes d as [time.Duration.String] does, without the
// zero minutes and seconds that follow whole hours or minutes: 24h, 1h30m,
// 10m, 1m30s, 100ms.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// Run runs the benchmark described by cfg.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Normalize(); err != nil {
		return nil, err
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer pool.Close()

	schema := pgident.Quote(cfg.Schema)
	res := &Result{
		Clients: cfg.Clients, Rounds: cfg.Rounds,
		RoundSeconds:      (cfg.Duration / time.Duration(cfg.Rounds)).Seconds(),
		SynchronousCommit: cfg.SynchronousCommit,
		Bigserial:         Variant{Name: "bigserial", SeqWALPerID: -1},
		Snowflake:         Variant{Name: "snowflake_next_id", SeqWALPerID: -1},
	}
	err = pool.QueryRow(ctx, `SELECT pg_catalog.current_setting('server_version'), n.datacenter_id, n.machine_id
		FROM `+schema+`.snowflake_node() n`).Scan(&res.ServerVersion, &res.Node[0], &res.Node[1])
	if err != nil {
		return nil, fmt.Errorf("snowflake_next_id() is not usable in schema %s (install it first): %w", cfg.Schema, err)
	}

	n := 2
	if cfg.Native {
		n = 3
		var ok bool
		if err := pool.QueryRow(ctx, "SELECT pg_catalog.to_regprocedure($1) IS NOT NULL", schema+".snowflake_next_id_native()").Scan(&ok); err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("no %s.snowflake_next_id_native(): install the native generator beside the SQL one first (without a database, sfgen bench --native does it in its throwaway PostgreSQL): %w", cfg.Schema, ErrNoNative)
		}
		res.Native = &Variant{Name: "snowflake_next_id_native", SeqWALPerID: -1}
	}
	tables, drop, err := createScratchTables(ctx, pool, schema, n)
	defer drop()
	if err != nil {
		return nil, err
	}
	walinspect := walinspectSchema(ctx, pool)

	conns := make([]*pgxpool.Conn, cfg.Clients)
	for i := range conns {
		if conns[i], err = pool.Acquire(ctx); err != nil {
			return nil, err
		}
		defer conns[i].Release()
	}
	variants := []*Variant{&res.Bigserial, &res.Snowflake}
	if res.Native != nil {
		variants = append(variants, res.Native)
	}
	var inserts []string
	for _, t := range tables {
		inserts = append(inserts, "INSERT INTO "+t+" (client) VALUES ($1)")
	}

	// Warm up each: connections, prepared statements, caches.
	warm := min(time.Second, cfg.Duration/20)
	fmt.Fprintf(progress, "warming up %v per variant\n", warm)
	for v := range variants {
		if _, err := insertFor(ctx, conns, inserts[v], warm); err != nil {
			return nil, err
		}
	}
	spans, err := runRounds(ctx, pool, conns, inserts, variants, cfg, progress)
	if err != nil {
		return nil, err
	}
	if walinspect != "" {
		if err := sequenceWALs(ctx, pool, walinspect, variants, spans); err != nil {
			fmt.Fprintf(progress, "pg_walinspect failed, no sequence WAL figures: %v\n", err)
		}
	}
	for _, vr := range variants {
		vr.TPS = float64(vr.Rows) / vr.Seconds
		vr.WALPerRow = float64(vr.WALBytes) / float64(vr.Rows)
	}
	res.Ratio = res.Snowflake.TPS / res.Bigserial.TPS
	for i := range res.Bigserial.RoundTPS {
		res.RoundRatios = append(res.RoundRatios, res.Snowflake.RoundTPS[i]/res.Bigserial.RoundTPS[i])
	}
	if res.Native != nil {
		res.NativeRatio = res.Native.TPS / res.Bigserial.TPS
		for i := range res.Bigserial.RoundTPS {
			res.NativeRoundRatios = append(res.NativeRoundRatios, res.Native.RoundTPS[i]/res.Bigserial.RoundTPS[i])
		}
	}

	fmt.Fprintf(progress, "measuring the lag\n")
	if res.Lag, err = measureLag(ctx, pool, schema, tables[1]); err != nil {
		return nil, err
	}
	if cfg.StatementRows > 0 {
		if res.Statement, err = runStatements(ctx, pool, schema, cfg, n, progress); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// runStatements measures one INSERT ... SELECT of cfg.StatementRows rows
// per variant (n of them) into a fresh table of its shape,
// cfg.StatementRuns times, in the orders rounds use; each table is dropped
// after its run.
func runStatements(ctx context.Context, pool *pgxpool.Pool, schema string, cfg Config, n int, progress io.Writer) (*Statement, error) {
	st := &Statement{Rows: cfg.StatementRows, Runs: cfg.StatementRuns}
	per := []*[]float64{&st.BigserialUs, &st.SnowflakeUs, &st.NativeUs}[:n]
	names := []string{"bigserial", "snowflake_next_id", "snowflake_next_id_native"}
	perm := orders(n)
	for r := range cfg.StatementRuns {
		for _, v := range perm[r%len(perm)] {
			us, err := oneStatement(ctx, pool, schema, v, cfg.StatementRows)
			if err != nil {
				return nil, err
			}
			*per[v] = append(*per[v], us)
			fmt.Fprintf(progress, "statement %d/%d %-24s %7.3f us/row\n", r+1, cfg.StatementRuns, names[v], us)
		}
	}
	extra := func(us []float64) float64 {
		diffs := make([]float64, len(us))
		for i := range diffs {
			diffs[i] = us[i] - st.BigserialUs[i]
		}
		return quantile(diffs, 0.5)
	}
	st.BigserialMedianUs = quantile(st.BigserialUs, 0.5)
	st.SnowflakeMedianUs = quantile(st.SnowflakeUs, 0.5)
	st.ExtraMedianUs = extra(st.SnowflakeUs)
	if n > variantNative {
		st.NativeMedianUs = quantile(st.NativeUs, 0.5)
		st.NativeExtraMedianUs = extra(st.NativeUs)
	}
	return st, nil
}

// oneStatement creates a fresh scratch table of variant v's shape,
// inserts rows into it in one statement, drops it, and returns the
// statement's microseconds per row.
func oneStatement(ctx context.Context, pool *pgxpool.Pool, schema string, v, rows int) (float64, error) {
	suffix := make([]byte, 4)
	rand.Read(suffix)
	table := schema + "." + pgident.Quote("sfgen_bench_stmt_"+hex.EncodeToString(suffix))
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pool.Exec(cctx, "DROP TABLE IF EXISTS "+table)
	}()
	if _, err := pool.Exec(ctx, scratchTable(table, schema, v)); err != nil {
		return 0, fmt.Errorf("create scratch table: %w", err)
	}
	t0 := time.Now()
	if _, err := pool.Exec(ctx, "INSERT INTO "+table+" (client) SELECT 0 FROM pg_catalog.generate_series(1, $1::integer)", rows); err != nil {
		return 0, fmt.Errorf("one-statement insert: %w", err)
	}
	return float64(time.Since(t0).Microseconds()) / float64(rows), nil
}

// scratchTable is the CREATE TABLE of a scratch table (quoted, qualified)
// with variant v's id, from schema (quoted).
func scratchTable(table, schema string, v int) string {
	return `CREATE TABLE ` + table + ` (
			` + idDefault(v, schema) + `,
			at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
			client integer NOT NULL)`
}

// openPool opens the pool Run uses: one connection a client and one for
// itself, with the synchronous_commit cfg asks for. search_path is pinned
// to pg_catalog, pg_temp (see package connect), so the built-ins Run
// calls resolve nowhere else whether qualified or not (operators and
// types included); pg_walinspect's functions are qualified with its
// schema.
func openPool(ctx context.Context, cfg Config) (*pgxpool.Pool, error) {
	pcfg, err := connect.PoolConfig(cfg.DSN)
	if err != nil {
		return nil, err
	}
	pcfg.MaxConns = int32(cfg.Clients + 1)
	pcfg.MinConns = 0
	pcfg.ConnConfig.RuntimeParams["synchronous_commit"] = cfg.SynchronousCommit
	pool, err := connect.NewPool(ctx, pcfg, cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return pool, nil
}

// createScratchTables creates the tables the n variants insert into, in
// schema (quoted), under a random name, and returns their qualified names
// and a function that drops them, to be called however Run ends (also
// when the creation failed halfway).
func createScratchTables(ctx context.Context, pool *pgxpool.Pool, schema string, n int) (tables []string, drop func(), err error) {
	suffix := make([]byte, 4)
	rand.Read(suffix)
	base := fmt.Sprintf("sfgen_bench_%s", hex.EncodeToString(suffix))
	for _, name := range []string{"_bigserial", "_snowflake", "_native"}[:n] {
		tables = append(tables, schema+"."+pgident.Quote(base+name))
	}
	drop = func() {
		// The caller's context may be what ended the run.
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, t := range tables {
			pool.Exec(cctx, "DROP TABLE IF EXISTS "+t)
		}
	}
	for i, t := range tables {
		if _, err := pool.Exec(ctx, scratchTable(t, schema, i)); err != nil {
			return tables, drop, fmt.Errorf("create scratch table: %w", err)
		}
	}
	return tables, drop, nil
}

// runRounds runs cfg.Rounds rounds of every variant, in the orders of
// orders(), adds each round's rows, time and WAL to its variant, and
// returns each variant's rounds as WAL start and end positions.
func runRounds(ctx context.Context, pool *pgxpool.Pool, conns []*pgxpool.Conn, inserts []string, variants []*Variant, cfg Config, progress io.Writer) (spans [][][2]string, err error) {
	round := cfg.Duration / time.Duration(cfg.Rounds)
	spans = make([][][2]string, len(variants))
	perm := orders(len(variants))
	for r := range cfg.Rounds {
		for _, v := range perm[r%len(perm)] {
			start, err := walLSN(ctx, pool)
			if err != nil {
				return spans, err
			}
			t0 := time.Now()
			n, err := insertFor(ctx, conns, inserts[v], round)
			el := time.Since(t0).Seconds()
			if err != nil {
				return spans, err
			}
			end, err := walLSN(ctx, pool)
			if err != nil {
				return spans, err
			}
			var wal int64
			if err := pool.QueryRow(ctx, "SELECT pg_catalog.pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn)::bigint", start, end).Scan(&wal); err != nil {
				return spans, err
			}
			vr := variants[v]
			vr.Rows += n
			vr.Seconds += el
			vr.WALBytes += wal
			vr.RoundTPS = append(vr.RoundTPS, float64(n)/el)
			spans[v] = append(spans[v], [2]string{start, end})
			fmt.Fprintf(progress, "round %d/%d %-24s %9.0f tps  %6.1f B WAL/row\n", r+1, cfg.Rounds, vr.Name, float64(n)/el, float64(wal)/float64(n))
		}
	}
	return spans, nil
}

// measureLag works out, over every row of the snowflake_next_id() table,
// how far the ID's time trails the clock_timestamp() the row stored, in
// milliseconds.
func measureLag(ctx context.Context, pool *pgxpool.Pool, schema, table string) (Lag, error) {
	var l Lag
	err := pool.QueryRow(ctx, `
		SELECT pg_catalog.count(*), pg_catalog.percentile_cont(0.5) WITHIN GROUP (ORDER BY lag),
		       pg_catalog.percentile_cont(0.99) WITHIN GROUP (ORDER BY lag), pg_catalog.max(lag), pg_catalog.min(lag)
		FROM (SELECT pg_catalog.extract('epoch', at - `+schema+`.snowflake_timestamp(id))::float8 * 1000 AS lag
		      FROM `+table+`) x`).Scan(&l.Rows, &l.P50, &l.P99, &l.Max, &l.Min)
	if err != nil {
		return l, fmt.Errorf("measure lag: %w", err)
	}
	return l, nil
}

// insertFor runs one INSERT per iteration on every connection at once,
// for d, and returns the number of rows inserted.
func insertFor(ctx context.Context, conns []*pgxpool.Conn, insert string, d time.Duration) (int64, error) {
	var (
		total    atomic.Int64
		wg       sync.WaitGroup
		firstErr error
		once     sync.Once
	)
	deadline := time.Now().Add(d)
	for i, c := range conns {
		wg.Add(1)
		go func(client int, c *pgx.Conn) {
			defer wg.Done()
			var n int64
			for time.Now().Before(deadline) {
				if _, err := c.Exec(ctx, insert, client); err != nil {
					once.Do(func() { firstErr = err })
					break
				}
				n++
			}
			total.Add(n)
		}(i, c.Conn())
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return total.Load(), nil
}

func walLSN(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var lsn string
	err := pool.QueryRow(ctx, "SELECT pg_catalog.pg_current_wal_insert_lsn()::text").Scan(&lsn)
	return lsn, err
}

// walinspectSchema returns the quoted schema of the pg_walinspect
// extension, or "" when it is not installed in the database (the bench
// never creates it: that needs rights it does not otherwise use).
func walinspectSchema(ctx context.Context, pool *pgxpool.Pool) string {
	var schema string
	err := pool.QueryRow(ctx, `SELECT pg_catalog.quote_ident(n.nspname)
		FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname = 'pg_walinspect'`).Scan(&schema)
	if err != nil {
		return ""
	}
	return schema
}

// sequenceWALs sets each variant's SeqWALPerID from the bytes of WAL
// records of the Sequence resource manager (nextval, setval) in its rounds,
// read with pg_walinspect from its (quoted) schema walinspect.
func sequenceWALs(ctx context.Context, pool *pgxpool.Pool, walinspect string, variants []*Variant, spans [][][2]string) error {
	// pg_walinspect reads only flushed WAL; with synchronous_commit=off the
	// WAL writer flushes within wal_writer_delay. Wait for it.
	last := spans[0][len(spans[0])-1][1]
	for _, sp := range spans[1:] {
		var err error
		if last, err = laterLSN(last, sp[len(sp)-1][1]); err != nil {
			return err
		}
	}
	for i := 0; ; i++ {
		var flushed bool
		if err := pool.QueryRow(ctx, "SELECT pg_catalog.pg_current_wal_flush_lsn() >= $1::pg_lsn", last).Scan(&flushed); err != nil {
			return err
		}
		if flushed {
			break
		}
		if i == 100 {
			return fmt.Errorf("WAL not flushed up to %s after 10s", last)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for v, vr := range variants {
		var total int64
		for _, sp := range spans[v] {
			var n *int64
			err := pool.QueryRow(ctx, `SELECT pg_catalog.sum(combined_size)::bigint FROM `+walinspect+`.pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, false)
				WHERE "resource_manager/record_type" = 'Sequence'`, sp[0], sp[1]).Scan(&n)
			if err != nil {
				return err
			}
			if n != nil {
				total += *n
			}
		}
		vr.SeqWALPerID = float64(total) / float64(vr.Rows)
	}
	return nil
}

// laterLSN returns the later of two WAL positions in PostgreSQL's text
// form, X/Y in unpadded hex, which do not sort as strings ("0/FFFFFFF" is
// before "0/10000000").
func laterLSN(a, b string) (string, error) {
	x, err := parseLSN(a)
	if err != nil {
		return "", err
	}
	y, err := parseLSN(b)
	if err != nil {
		return "", err
	}
	if y > x {
		return b, nil
	}
	return a, nil
}

// parseLSN parses a pg_lsn's text, X/Y in hex, as the 64-bit position.
func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("WAL position %q is not X/Y in hex", s)
	}
	return h<<32 | l, nil
}

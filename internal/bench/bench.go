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
// With Config.Native the native generator, snowflake_next_id_native(),
// is a third variant, and Config.Compare adds any other function of no
// arguments as the DEFAULT of a bigint id (a peer's generator, such as
// pgEdge's snowflake.nextval()): every variant runs in the same
// alternating rounds, each round in another order of them all.
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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// ErrCompareUnusable is wrapped, with PostgreSQL's error, by the
// *CompareError that Run returns when a function of Config.Compare cannot
// be the DEFAULT of a bigint (or uuid) column.
var ErrCompareUnusable = errors.New("compared function cannot be the default of a bigint or uuid column")

// A CompareError reports a function of Config.Compare that cannot be the
// DEFAULT of the id: there is none of that name callable with no
// arguments where the bench sessions look (search_path is pg_catalog,
// pg_temp: see package connect), or its result is neither uuid (the id
// is then uuid) nor assignable to bigint. Err is PostgreSQL's error.
type CompareError struct {
	Func FuncName
	Err  error
}

func (e *CompareError) Error() string {
	msg := fmt.Sprintf("compare function %s cannot be the DEFAULT of the id (it must be callable with no arguments and return uuid or a value assignable to bigint)", e.Func.Text)
	if e.Func.Schema == "" {
		msg += "; an unqualified name is looked up only in pg_catalog and pg_temp, the bench sessions' search_path: qualify it with its schema (schema.name)"
	}
	return msg + ": " + e.Err.Error()
}

// Unwrap returns ErrCompareUnusable and PostgreSQL's error.
func (e *CompareError) Unwrap() []error { return []error{ErrCompareUnusable, e.Err} }

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

	MaxCompare = 4 // the most functions Config.Compare may name
)

// The profiles of Config.Profile: the shape of the measured rows and how
// they commit.
const (
	// ProfileMagnifying, the default: rows of (id, at timestamptz, client
	// integer) with synchronous_commit off, so that the ID's cost shows
	// as large as it gets beside the rest of an INSERT.
	ProfileMagnifying = "magnifying"
	// ProfileRealistic: synchronous_commit on, and each row also has a
	// 100-byte text, with an index on its time column besides the
	// primary key: a row as an application inserts it.
	ProfileRealistic = "realistic"
)

// Profiles are the values Config.Profile takes.
var Profiles = []string{ProfileMagnifying, ProfileRealistic}

// realisticNote is the text column's value in ProfileRealistic's rows:
// 100 bytes, under any compression threshold.
const realisticNote = "sfgen bench, realistic profile: a hundred bytes of text in every row, as an application stores them."

// Config says what to measure.
type Config struct {
	DSN string // the database; snowflake_next_id() must be installed in Schema
	// Role, when not "", is the role every session acts as (SET ROLE):
	// the owner of Schema's sfgen functions, where the connecting role is
	// another, so that their code runs with no privileges its owner lacks.
	Role     string
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
	// Profile is the rows' shape and commit, one of Profiles; ""
	// means ProfileMagnifying.
	Profile string
	// SynchronousCommit is the synchronous_commit of the bench sessions;
	// "" means off with ProfileMagnifying, so that the commit's fsync
	// does not hide the cost of the ID, and on with ProfileRealistic.
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
	Native bool
	// Compare names other functions to measure as the DEFAULT of a bigint
	// id, each one more variant after the others, at most MaxCompare of
	// them: name or schema.name, as ParseFuncName reads it (the DEFAULT is
	// written from the parsed parts, quoted). Each must be callable with
	// no arguments (defaults allowed). The bench sessions' search_path is
	// pg_catalog, pg_temp, so an unqualified name is found only there:
	// qualify a function of any other schema.
	Compare  []string
	Progress io.Writer // progress lines; nil means none

	compare []FuncName // Compare, parsed by Normalize
}

// A Variant is one side of the comparison.
type Variant struct {
	Name      string    `json:"name"`      // bigserial, snowflake_next_id, snowflake_next_id_native, or a compared function as written: snowflake.nextval()
	Rows      int64     `json:"rows"`      // rows inserted in the measured rounds
	Seconds   float64   `json:"seconds"`   // measured time
	TPS       float64   `json:"tps"`       // Rows / Seconds
	RoundTPS  []float64 `json:"round_tps"` // each round's rate
	WALBytes  int64     `json:"wal_bytes"` // WAL written in its rounds, all of it
	WALPerRow float64   `json:"wal_per_row"`
	// IDType is the id column's type: bigint, or uuid for a compared
	// function that returns one.
	IDType string `json:"id_type"`
	// TableRows is how many rows its table had after the rounds (the
	// warm-up's too), and PKeyBytes the size of its primary key index
	// then: PKeyBytesPerRow is what each ID costs in that index.
	TableRows       int64   `json:"table_rows"`
	PKeyBytes       int64   `json:"pkey_bytes"`
	PKeyBytesPerRow float64 `json:"pkey_bytes_per_row"`
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
	Profile           string  `json:"profile"`
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
	// Compared holds the variants of Config.Compare, in its order.
	Compared []Compared `json:"compared,omitempty"`
	// SeqWALNote says why the variants' SeqWALPerID are -1 ("n/a"); ""
	// when they were measured.
	SeqWALNote string `json:"seq_wal_note,omitempty"`
}

// Compared is one function of Config.Compare, measured as the DEFAULT of
// a bigint id beside the others, in JSON:
//
//	{"variant": {"name": "snowflake.nextval()", "rows": ..., ...},
//	 "default": "\"snowflake\".\"nextval\"()", "ratio": 0.97, "round_ratios": [...]}
//
// Its one-statement runs are in Statement.Compared.
type Compared struct {
	Variant Variant `json:"variant"` // Name is the function as written, with ()
	Default string  `json:"default"` // the DEFAULT expression, as Run wrote it
	Ratio   float64 `json:"ratio"`   // Variant.TPS / Bigserial.TPS
	// RoundRatios are its rate over bigserial's in each round.
	RoundRatios []float64 `json:"round_ratios"`
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
	// Compared holds the runs of Config.Compare's functions, in its order.
	Compared []ComparedStatement `json:"compared,omitempty"`
	// Bytes are what each variant's statement left, in the order of the
	// report's table (bigserial first): the bytes of its primary key index
	// per row, and the WAL the statement wrote per row (medians of the
	// runs). Each run follows a CHECKPOINT where the role may run one
	// (Checkpointed), so that every run writes the full-page images a
	// fresh checkpoint costs; otherwise the WAL figures depend on when the
	// server's last checkpoint was.
	Bytes        []StatementBytes `json:"bytes"`
	Checkpointed bool             `json:"checkpointed"`
}

// StatementBytes is what one variant's one-statement INSERT left.
type StatementBytes struct {
	Name            string  `json:"name"`
	PKeyBytesPerRow float64 `json:"pkey_bytes_per_row"`
	WALPerRow       float64 `json:"wal_per_row"`
}

// ComparedStatement is the one-statement measurement of one function of
// Config.Compare.
type ComparedStatement struct {
	Name          string    `json:"name"`       // the function as written, with (): snowflake.nextval()
	Us            []float64 `json:"us_per_row"` // each run's
	MedianUs      float64   `json:"median_us"`
	ExtraMedianUs float64   `json:"extra_median_us"` // the median of each run's difference from bigserial's
}

// A kind is what a variant's id is.
type kind int

const (
	kindBigserial kind = iota // id bigserial
	kindSQL                   // DEFAULT snowflake_next_id()
	kindNative                // DEFAULT snowflake_next_id_native()
	kindCompared              // DEFAULT a function of Config.Compare
)

// A variant is one side of the comparison as Run measures it: its kind,
// its id column's DEFAULT, the suffix of its scratch table's name, and
// where its figures go. Run's variants are bigserial, the SQL generator,
// with Config.Native the native one, then Config.Compare's functions.
type variant struct {
	kind   kind
	def    string // the DEFAULT expression, quoted; "" for bigserial
	suffix string // of its scratch table's name
	res    *Variant
	fn     FuncName // the function of a kindCompared
	uuid   bool     // a kindCompared whose function returns uuid: the id is uuid
}

// idColumn is v's id column.
func (v variant) idColumn() string {
	switch {
	case v.kind == kindBigserial:
		return "id bigserial PRIMARY KEY"
	case v.uuid:
		return "id uuid PRIMARY KEY DEFAULT " + v.def
	}
	return "id bigint PRIMARY KEY DEFAULT " + v.def
}

// idType is the type of v's id column.
func (v variant) idType() string {
	if v.uuid {
		return "uuid"
	}
	return "bigint"
}

// generators says where a schema's two generators are, as DEFAULT
// expressions: the SQL one and (with Config.Native) the native one.
type generators struct {
	sql, sqlName       string
	native, nativeName string
}

// generatorsOf finds the generators of schema (quoted): the SQL
// snowflake_next_id() and, beside it, snowflake_next_id_native(); or,
// where snowflake_next_id() is the native generator (sfgen install
// --native), that one, and the SQL generator as the expression of its
// function's body (sqlgen.NextIDExpression), on the same state.
func generatorsOf(schema string, installed native.Generator, sqlExpr string) generators {
	if installed.Native() {
		return generators{sql: sqlExpr, sqlName: "snowflake_next_id (SQL)", native: schema + ".snowflake_next_id()", nativeName: "snowflake_next_id (native)"}
	}
	return generators{sql: schema + ".snowflake_next_id()", sqlName: "snowflake_next_id", native: schema + ".snowflake_next_id_native()", nativeName: "snowflake_next_id_native"}
}

// variants returns the variants that cfg (normalized) asks for, with the
// generators g, with their figures in res (whose Native and Compared it
// sets).
func variants(cfg Config, g generators, res *Result) []variant {
	res.Snowflake.Name = g.sqlName
	vs := []variant{
		{kind: kindBigserial, suffix: "_bigserial", res: &res.Bigserial},
		{kind: kindSQL, def: g.sql, suffix: "_snowflake", res: &res.Snowflake},
	}
	if cfg.Native {
		res.Native = &Variant{Name: g.nativeName, SeqWALPerID: -1}
		vs = append(vs, variant{kind: kindNative, def: g.native, suffix: "_native", res: res.Native})
	}
	if len(cfg.compare) > 0 {
		res.Compared = make([]Compared, len(cfg.compare))
	}
	for i, f := range cfg.compare {
		def := f.Call() // from the parsed parts, quoted: never the text as given
		res.Compared[i] = Compared{Variant: Variant{Name: f.Text, SeqWALPerID: -1}, Default: def}
		vs = append(vs, variant{kind: kindCompared, def: def, suffix: fmt.Sprintf("_compare%d", i+1), res: &res.Compared[i].Variant, fn: f})
	}
	return vs
}

// orders returns the order the n variants run in, round after round:
// every permutation once, so that each variant runs first, last and
// between the others equally often. They come in blocks of n, the
// rotations of one order, so that in every n rounds from the first each
// variant runs once in each place, however few rounds there are of the
// n! orders.
func orders(n int) [][]int {
	var out [][]int
	for _, rest := range permutations(n - 1) {
		p := []int{0}
		for _, v := range rest {
			p = append(p, v+1)
		}
		for r := range n {
			out = append(out, append(slices.Clone(p[r:]), p[:r]...))
		}
	}
	return out
}

// permutations returns every permutation of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, rest := range permutations(n - 1) {
		for i := 0; i <= len(rest); i++ {
			out = append(out, append(append(append([]int{}, rest[:i]...), n-1), rest[i:]...))
		}
	}
	return out
}

// Normalize fills in the defaults of c's zero fields and checks the
// result, with the error that Run would return. A command line calls it to
// tell bad flags from a failed run.
func (c *Config) Normalize() error {
	schema, err := catalog.ParseSchema(c.Schema)
	if err != nil {
		return err
	}
	c.Schema = schema.Name()
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
	if c.Profile == "" {
		c.Profile = ProfileMagnifying
	}
	if !slices.Contains(Profiles, c.Profile) {
		return fmt.Errorf("profile %q is not one of %s", c.Profile, strings.Join(Profiles, ", "))
	}
	if c.SynchronousCommit == "" {
		c.SynchronousCommit = "off"
		if c.Profile == ProfileRealistic {
			c.SynchronousCommit = "on"
		}
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
	if len(c.Compare) > MaxCompare {
		return fmt.Errorf("%d compare functions; at most %d", len(c.Compare), MaxCompare)
	}
	c.compare = nil
	for _, s := range c.Compare {
		f, err := ParseFuncName(s)
		if err != nil {
			return err
		}
		for _, g := range c.compare {
			if g.Schema == f.Schema && g.Name == f.Name {
				return fmt.Errorf("compare function %s twice (as %s and %s)", f.Call(), g.Text, f.Text)
			}
		}
		c.compare = append(c.compare, f)
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

	target, err := catalog.ParseSchema(cfg.Schema)
	if err != nil {
		return nil, err
	}
	schema := target.Quoted()
	res := &Result{
		Clients: cfg.Clients, Rounds: cfg.Rounds,
		RoundSeconds:      (cfg.Duration / time.Duration(cfg.Rounds)).Seconds(),
		Profile:           cfg.Profile,
		SynchronousCommit: cfg.SynchronousCommit,
		Bigserial:         Variant{Name: "bigserial", SeqWALPerID: -1},
		Snowflake:         Variant{Name: "snowflake_next_id", SeqWALPerID: -1},
	}
	// The schema as Inspect reads it, trusted (or refused) before any of
	// its functions is called.
	in, err := catalog.Inspect(ctx, catalog.PGX(pool), target)
	if err != nil {
		return nil, err
	}
	if in.Node.State != catalog.NodeSet || !in.Has(catalog.FuncNextID) {
		return nil, fmt.Errorf("snowflake_next_id() is not usable in schema %s (install it first, with a node): %s", cfg.Schema, in.Node)
	}
	res.Node = [2]int{int(in.Node.Datacenter), int(in.Node.Machine)}
	if err := pool.QueryRow(ctx, "SELECT pg_catalog.current_setting('server_version')").Scan(&res.ServerVersion); err != nil {
		return nil, err
	}

	installed, err := native.InstalledGenerator(ctx, pool, target.Name())
	if err != nil {
		return nil, err
	}
	var sqlExpr string
	if installed.Native() {
		// The native generator is the schema's: measure it, and the SQL
		// one beside it, as its body's expression for the schema's layout.
		cfg.Native = true
		if !slices.Contains(native.Releases, in.Effective()) {
			return nil, fmt.Errorf("schema %s is at sfgen release %d, whose state the SQL generator of release %d does not share (releases %v do): run sfgen install first", cfg.Schema, in.Effective(), sqlgen.Latest, native.Releases)
		}
		if sqlExpr, err = sqlgen.NextIDExpression(sqlgen.Options{Layout: in.Layout, Schema: target.Name()}); err != nil {
			return nil, err
		}
	} else if cfg.Native {
		var ok bool
		if err := pool.QueryRow(ctx, "SELECT pg_catalog.to_regprocedure($1) IS NOT NULL", schema+".snowflake_next_id_native()").Scan(&ok); err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("schema %s has no native generator: its snowflake_next_id() is the SQL one, and no snowflake_next_id_native() is beside it; install it with sfgen install --native --schema %s (its snowflake_next_id() is then the native one, and sfgen bench measures the SQL one beside it), or run sfgen bench --native without --dsn, which builds one in a throwaway PostgreSQL: %w", cfg.Schema, cfg.Schema, ErrNoNative)
		}
	}
	vs := variants(cfg, generatorsOf(schema, installed, sqlExpr), res)
	if err := resultTypes(ctx, pool, vs); err != nil {
		return nil, err
	}
	tables, drop, err := createScratchTables(ctx, pool, schema, vs, cfg.Profile)
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
	var inserts []string
	for _, t := range tables {
		inserts = append(inserts, "INSERT INTO "+t+" (client) VALUES ($1)")
	}

	// Warm up each: connections, prepared statements, caches.
	warm := min(time.Second, cfg.Duration/20)
	fmt.Fprintf(progress, "warming up %v per variant\n", warm)
	for i, v := range vs {
		if _, err := insertFor(ctx, conns, inserts[i], warm); err != nil {
			return nil, fmt.Errorf("inserts with %s: %w", v.res.Name, err)
		}
	}
	spans, err := runRounds(ctx, pool, conns, inserts, vs, cfg, progress)
	if err != nil {
		return nil, err
	}
	if walinspect == "" {
		res.SeqWALNote = "this database has no pg_walinspect extension, which reads it (CREATE EXTENSION pg_walinspect, PostgreSQL 15 and later; its functions need pg_read_server_files)"
	} else if err := sequenceWALs(ctx, pool, walinspect, vs, spans); err != nil {
		res.SeqWALNote = "pg_walinspect failed: " + err.Error()
		fmt.Fprintf(progress, "pg_walinspect failed, no sequence WAL figures: %v\n", err)
	}
	for i, v := range vs {
		vr := v.res
		vr.TPS = float64(vr.Rows) / vr.Seconds
		vr.WALPerRow = float64(vr.WALBytes) / float64(vr.Rows)
		if err := pool.QueryRow(ctx, `SELECT (SELECT pg_catalog.count(*) FROM `+tables[i]+`), `+pkeySize("$1"), tables[i]).
			Scan(&vr.TableRows, &vr.PKeyBytes); err != nil {
			return nil, fmt.Errorf("primary key size, %s: %w", vr.Name, err)
		}
		vr.PKeyBytesPerRow = float64(vr.PKeyBytes) / float64(vr.TableRows)
	}
	res.Ratio, res.RoundRatios = ratios(&res.Snowflake, &res.Bigserial)
	if res.Native != nil {
		res.NativeRatio, res.NativeRoundRatios = ratios(res.Native, &res.Bigserial)
	}
	for i := range res.Compared {
		c := &res.Compared[i]
		c.Ratio, c.RoundRatios = ratios(&c.Variant, &res.Bigserial)
	}

	fmt.Fprintf(progress, "measuring the lag\n")
	if res.Lag, err = measureLag(ctx, pool, schema, tables[1]); err != nil {
		return nil, err
	}
	if cfg.StatementRows > 0 {
		if res.Statement, err = runStatements(ctx, pool, schema, vs, cfg, progress); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// ratios returns v's rate over base's, overall and in each round.
func ratios(v, base *Variant) (float64, []float64) {
	var rounds []float64
	for i := range base.RoundTPS {
		rounds = append(rounds, v.RoundTPS[i]/base.RoundTPS[i])
	}
	return v.TPS / base.TPS, rounds
}

// runStatements measures one INSERT ... SELECT of cfg.StatementRows rows
// per variant of vs into a fresh table of its shape, cfg.StatementRuns
// times, in the orders rounds use; each table is dropped after its run.
func runStatements(ctx context.Context, pool *pgxpool.Pool, schema string, vs []variant, cfg Config, progress io.Writer) (*Statement, error) {
	st := &Statement{Rows: cfg.StatementRows, Runs: cfg.StatementRuns, Checkpointed: true}
	per := make([][]float64, len(vs))
	wal := make([][]float64, len(vs))
	pkey := make([][]float64, len(vs))
	perm := orders(len(vs))
	for r := range cfg.StatementRuns {
		for _, i := range perm[r%len(perm)] {
			if st.Checkpointed {
				if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
					var pgErr *pgconn.PgError
					if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
						return nil, fmt.Errorf("checkpoint before a statement: %w", err)
					}
					st.Checkpointed = false
					fmt.Fprintf(progress, "no CHECKPOINT before the statements (%v): their WAL figures depend on the server's last one\n", pgErr.Message)
				}
			}
			sr, err := oneStatement(ctx, pool, schema, vs[i], cfg)
			if err != nil {
				return nil, err
			}
			per[i] = append(per[i], sr.us)
			wal[i] = append(wal[i], sr.walPerRow)
			pkey[i] = append(pkey[i], sr.pkeyPerRow)
			fmt.Fprintf(progress, "statement %d/%d %-24s %7.3f us/row %7.1f B WAL/row %5.1f B pkey/row\n", r+1, cfg.StatementRuns, vs[i].res.Name, sr.us, sr.walPerRow, sr.pkeyPerRow)
		}
	}
	for i, v := range vs {
		st.Bytes = append(st.Bytes, StatementBytes{Name: v.res.Name, PKeyBytesPerRow: quantile(pkey[i], 0.5), WALPerRow: quantile(wal[i], 0.5)})
	}
	extra := func(us []float64) float64 {
		diffs := make([]float64, len(us))
		for i := range diffs {
			diffs[i] = us[i] - per[0][i]
		}
		return quantile(diffs, 0.5)
	}
	for i, v := range vs {
		switch v.kind {
		case kindBigserial:
			st.BigserialUs = per[i]
			st.BigserialMedianUs = quantile(per[i], 0.5)
		case kindSQL:
			st.SnowflakeUs = per[i]
			st.SnowflakeMedianUs = quantile(per[i], 0.5)
			st.ExtraMedianUs = extra(per[i])
		case kindNative:
			st.NativeUs = per[i]
			st.NativeMedianUs = quantile(per[i], 0.5)
			st.NativeExtraMedianUs = extra(per[i])
		case kindCompared:
			st.Compared = append(st.Compared, ComparedStatement{Name: v.res.Name, Us: per[i], MedianUs: quantile(per[i], 0.5), ExtraMedianUs: extra(per[i])})
		}
	}
	return st, nil
}

// pkeySize is a scalar subquery: the bytes of the primary key index of
// the table that the query parameter param (as "$1") names.
func pkeySize(param string) string {
	return `(SELECT pg_catalog.pg_relation_size(c.conindid) FROM pg_catalog.pg_constraint c
		WHERE c.conrelid OPERATOR(pg_catalog.=) ` + param + `::pg_catalog.regclass AND c.contype OPERATOR(pg_catalog.=) 'p')`
}

// A statementRun is what one statement of oneStatement measured, per
// row: its time, the WAL it wrote, and its table's primary key index.
type statementRun struct{ us, walPerRow, pkeyPerRow float64 }

// oneStatement creates a fresh scratch table of variant v's shape,
// inserts cfg.StatementRows rows into it in one statement, drops it, and
// returns what the statement measured.
func oneStatement(ctx context.Context, pool *pgxpool.Pool, schema string, v variant, cfg Config) (statementRun, error) {
	rows := cfg.StatementRows
	suffix := make([]byte, 4)
	rand.Read(suffix)
	table := schema + "." + pgident.Quote("sfgen_bench_stmt_"+hex.EncodeToString(suffix))
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pool.Exec(cctx, "DROP TABLE IF EXISTS "+table)
	}()
	if _, err := pool.Exec(ctx, scratchTable(table, v, cfg.Profile)); err != nil {
		return statementRun{}, v.createError(err)
	}
	// One connection for the statement and its WAL positions: the
	// insert position it reads is the server's, so other sessions' WAL
	// counts too (on a busy server, run the bench where it is quiet).
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return statementRun{}, err
	}
	defer conn.Release()
	var start string
	if err := conn.QueryRow(ctx, "SELECT pg_catalog.pg_current_wal_insert_lsn()::text").Scan(&start); err != nil {
		return statementRun{}, err
	}
	t0 := time.Now()
	if _, err := conn.Exec(ctx, "INSERT INTO "+table+" (client) SELECT 0 FROM pg_catalog.generate_series(1, $1::integer)", rows); err != nil {
		return statementRun{}, fmt.Errorf("one-statement insert, %s: %w", v.res.Name, err)
	}
	us := float64(time.Since(t0).Microseconds()) / float64(rows)
	var walBytes, pkeyBytes int64
	if err := conn.QueryRow(ctx, `SELECT pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint, `+pkeySize("$2"), start, table).
		Scan(&walBytes, &pkeyBytes); err != nil {
		return statementRun{}, fmt.Errorf("one-statement insert, %s: its WAL and primary key: %w", v.res.Name, err)
	}
	return statementRun{us: us, walPerRow: float64(walBytes) / float64(rows), pkeyPerRow: float64(pkeyBytes) / float64(rows)}, nil
}

// scratchTable is the CREATE TABLE of a scratch table (quoted, qualified)
// with variant v's id, in the shape of profile (and its index).
func scratchTable(table string, v variant, profile string) string {
	if profile == ProfileRealistic {
		return `CREATE TABLE ` + table + ` (
			` + v.idColumn() + `,
			at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
			client integer NOT NULL,
			note text NOT NULL DEFAULT ` + pgident.QuoteLiteral(realisticNote) + `);
		CREATE INDEX ON ` + table + ` (at)`
	}
	return `CREATE TABLE ` + table + ` (
			` + v.idColumn() + `,
			at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
			client integer NOT NULL)`
}

// resultTypes sets, for each compared function of vs, whether it returns
// uuid (its id is then uuid), from the result of a statement that calls
// it, prepared but not run.
func resultTypes(ctx context.Context, pool *pgxpool.Pool, vs []variant) error {
	for i := range vs {
		v := &vs[i]
		if v.kind != kindCompared {
			v.res.IDType = v.idType()
			continue
		}
		conn, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		sd, err := conn.Conn().Prepare(ctx, "", "SELECT "+v.def)
		conn.Release()
		if err != nil {
			return v.createError(err)
		}
		v.uuid = len(sd.Fields) == 1 && sd.Fields[0].DataTypeOID == pgtype.UUIDOID
		v.res.IDType = v.idType()
	}
	return nil
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
	if cfg.Role != "" {
		setRole := "SET ROLE " + pgident.Quote(cfg.Role)
		pcfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, setRole)
			return err
		}
	}
	pool, err := connect.NewPool(ctx, pcfg, cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return pool, nil
}

// createError is the error of creating a table with v's id: for a
// compared function, a *CompareError.
func (v variant) createError(err error) error {
	if v.kind == kindCompared {
		return &CompareError{Func: v.fn, Err: err}
	}
	return fmt.Errorf("create scratch table: %w", err)
}

// createScratchTables creates the tables the variants vs insert into, in
// schema (quoted), under a random name, and returns their qualified names
// and a function that drops them, to be called however Run ends (also
// when the creation failed halfway).
func createScratchTables(ctx context.Context, pool *pgxpool.Pool, schema string, vs []variant, profile string) (tables []string, drop func(), err error) {
	suffix := make([]byte, 4)
	rand.Read(suffix)
	base := fmt.Sprintf("sfgen_bench_%s", hex.EncodeToString(suffix))
	for _, v := range vs {
		tables = append(tables, schema+"."+pgident.Quote(base+v.suffix))
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
		if _, err := pool.Exec(ctx, scratchTable(t, vs[i], profile)); err != nil {
			return tables, drop, vs[i].createError(err)
		}
	}
	return tables, drop, nil
}

// runRounds runs cfg.Rounds rounds of every variant, in the orders of
// orders(), adds each round's rows, time and WAL to its variant, and
// returns each variant's rounds as WAL start and end positions.
func runRounds(ctx context.Context, pool *pgxpool.Pool, conns []*pgxpool.Conn, inserts []string, vs []variant, cfg Config, progress io.Writer) (spans [][][2]string, err error) {
	round := cfg.Duration / time.Duration(cfg.Rounds)
	spans = make([][][2]string, len(vs))
	perm := orders(len(vs))
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
				return spans, fmt.Errorf("inserts with %s: %w", vs[v].res.Name, err)
			}
			end, err := walLSN(ctx, pool)
			if err != nil {
				return spans, err
			}
			var wal int64
			if err := pool.QueryRow(ctx, "SELECT pg_catalog.pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn)::bigint", start, end).Scan(&wal); err != nil {
				return spans, err
			}
			vr := vs[v].res
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
func sequenceWALs(ctx context.Context, pool *pgxpool.Pool, walinspect string, vs []variant, spans [][][2]string) error {
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
	for v, vv := range vs {
		vr := vv.res
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

// Package audit checks the Snowflake IDs already stored in a table, inside
// PostgreSQL: one SQL statement reads the table once and aggregates it
// server-side (a hash GROUP BY the decoded node, FILTER for the
// anomalies, and with a time column a log histogram of the skew from which
// windows read its percentiles; see Query), so that what comes back is one
// row per node, never one per ID. A large plain table is read in ranges of
// its pages on several connections at once, in one snapshot, and the parts
// (with a time column, their histograms) added up in Go (see Run).
//
// The statement is Go-built text: the numbers in it (shifts, masks, the
// epoch) come only from the snowflake.Layout, the names (schema, table,
// columns) are checked by ValidateName, looked up in pg_catalog with bound
// parameters, and written with pgident.Quote; every operator is
// OPERATOR(pg_catalog.x) and every function and type pg_catalog's, so that
// nothing in the search_path (pinned anyway by internal/connect) changes its
// meaning.
//
// What counts, per non-NULL value of the ID column (see Report):
//   - invalid: a negative value. Every layout fills the 63 low bits of a
//     bigint, so every non-negative bigint decodes to a node and a time in
//     the layout, and a negative one to nothing.
//   - future: a valid ID whose time is after the database's now() plus the
//     tolerance.
//   - NULL values are counted apart (Nulls) and are not anomalies.
//   - legacy: with Options.LegacyBelow (the first ID made after 'sfgen
//     convert' moved the column to snowflake_next_id()), a value below it,
//     from before the conversion: counted apart, and in nothing else.
package audit

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/otherscode"
	"github.com/sfgen/sfgen/internal/pgident"
)

// Defaults: the schema and column when Options leave them empty, and the
// CLI's tolerance and threshold.
const (
	DefaultFutureTolerance = time.Minute
	DefaultSkewThreshold   = time.Second
	DefaultSchema          = "public"
	DefaultColumn          = "id"
)

// maxNameBytes is PostgreSQL's identifier limit (NAMEDATALEN - 1): a longer
// name would be truncated, and so name something else.
const maxNameBytes = 63

// Sentinels for errors.Is.
var (
	ErrInvalidName = errors.New("invalid name")
	ErrNotFound    = errors.New("not found")
	ErrColumnType  = errors.New("unsupported column type")
	ErrBadDuration = errors.New("duration out of range")
	// ErrOthersCode: reading the table would run another role's code
	// with this role's privileges (a view that is not this role's, a
	// function another role owns in an index, statistics, constraint,
	// policy or column type of the table).
	ErrOthersCode = errors.New("would run another role's code")
)

// A NameError reports a schema, table or column name ValidateName refuses.
// Value is the name whole; Error quotes at most its first
// maxQuotedNameBytes, so that a name of 100 KB is not echoed back whole.
type NameError struct {
	Field  string // "schema", "table", "column" or "time column"
	Value  string
	Reason string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("invalid %s name %s: %s", e.Field, quoteName(e.Value), e.Reason)
}

// maxQuotedNameBytes is the most of a rejected name an error quotes.
const maxQuotedNameBytes = 64

// quoteName quotes name, or, when it is longer than maxQuotedNameBytes, its
// first bytes up to that many (cut before a character, never inside one)
// followed by "…" outside the quotes. Whoever cuts with it says the whole
// length: ValidateName's reason for a long name does.
func quoteName(name string) string {
	if len(name) <= maxQuotedNameBytes {
		return strconv.Quote(name)
	}
	n := maxQuotedNameBytes
	for n > 0 && n > maxQuotedNameBytes-utf8.UTFMax && !utf8.RuneStart(name[n]) {
		n--
	}
	return strconv.Quote(name[:n]) + "…"
}

// Unwrap returns ErrInvalidName.
func (e *NameError) Unwrap() error { return ErrInvalidName }

// A NotFoundError reports a schema, table or column that is not in the
// database (or that the role cannot see).
type NotFoundError struct {
	Kind string // "table" or "column"
	Name string // as the user gave it: schema.table, or schema.table.column
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %s does not exist (names are matched exactly, as if quoted)", e.Kind, e.Name)
}

// Unwrap returns ErrNotFound.
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// A ColumnTypeError reports a column of a type the audit does not read.
type ColumnTypeError struct {
	Column  string
	Type    string
	Allowed []string
}

func (e *ColumnTypeError) Error() string {
	return fmt.Sprintf("column %s is of type %s; want one of %s", e.Column, e.Type, strings.Join(e.Allowed, ", "))
}

// Unwrap returns ErrColumnType.
func (e *ColumnTypeError) Unwrap() error { return ErrColumnType }

// A DurationError reports a tolerance or threshold out of its range.
type DurationError struct {
	Field    string
	Value    time.Duration
	Min, Max time.Duration
}

func (e *DurationError) Error() string {
	return fmt.Sprintf("%s %v out of range: want %v to %v", e.Field, e.Value, e.Min, e.Max)
}

// Unwrap returns ErrBadDuration.
func (e *DurationError) Unwrap() error { return ErrBadDuration }

// MaxDuration bounds the tolerance and the skew threshold (100 years).
const MaxDuration = 100 * 365 * 24 * time.Hour

// idTypes and timeTypes are the column types Run reads, as format_type
// writes them.
var (
	idTypes   = []string{"bigint", "integer", "smallint"}
	timeTypes = []string{"timestamp with time zone", "timestamp without time zone"}
)

// ValidateName checks a schema, table or column name the user gave: 1 to
// 63 bytes of valid UTF-8 without NUL. Any such name is accepted (it is
// looked up exactly as given and always quoted); field names the name in
// the error.
func ValidateName(field, name string) error {
	switch {
	case name == "":
		return &NameError{Field: field, Value: name, Reason: "empty"}
	case len(name) > maxNameBytes:
		return &NameError{Field: field, Value: name, Reason: fmt.Sprintf("%d bytes; want at most %d, PostgreSQL's identifier limit", len(name), maxNameBytes)}
	case !utf8.ValidString(name):
		return &NameError{Field: field, Value: name, Reason: "not valid UTF-8"}
	case strings.ContainsRune(name, 0):
		return &NameError{Field: field, Value: name, Reason: "contains a NUL byte"}
	}
	return nil
}

// Options says what to audit.
type Options struct {
	Schema     string // DefaultSchema when empty
	Table      string
	Column     string // DefaultColumn when empty
	TimeColumn string // optional: compare each ID's time with this column
	Layout     snowflake.Layout

	// FutureTolerance and SkewThreshold are used as given (0 is none),
	// in whole milliseconds; the CLI's defaults are DefaultFutureTolerance
	// and DefaultSkewThreshold.
	FutureTolerance time.Duration
	SkewThreshold   time.Duration

	// LegacyBelow, when not 0, is the first ID made after the column was
	// converted to snowflake_next_id(): the values below it are legacy
	// (the serial or identity values from before), counted apart and read
	// as no ID.
	LegacyBelow int64

	// Workers is how many connections Run reads a plain table through at
	// once, each a range of its pages, all in the snapshot of one
	// transaction, when the table has 1024 pages (8 MB) or more and Run
	// is given a *sql.DB; 0 means DefaultWorkers, 1 one statement.
	Workers int

	// Progress, when not nil, is called as each part of a table read in
	// chunks (Workers connections, each reading partsPerWorker ranges of
	// its pages in turn) is done, with the parts done so far and their
	// number; one call at a time, from the goroutines that read. A
	// table read in one statement gets no call: PostgreSQL reports no
	// progress of a single SELECT.
	Progress func(done, total int)

	// Distributed says the table is one that Citus spreads over its
	// nodes (it is in pg_dist_partition; Run finds out itself). Query
	// then leaves its subqueries for the planner to flatten, so that
	// Citus aggregates each shard on its worker and the coordinator
	// receives a few rows per shard, not every row of the table (a
	// subquery kept apart with OFFSET 0 cannot be pushed down).
	Distributed bool
}

// DefaultWorkers is Options.Workers when 0: PostgreSQL would scan with
// parallel workers itself, were it not for its estimate of one group per
// row for the decoded node key.
const DefaultWorkers = 2

// minChunkPages is the size, in pages, from which Run reads a table in
// chunks (8 MB with 8 kB pages): below it one statement is as quick.
// Tests lower it.
var minChunkPages int64 = 1024

// partsPerWorker is how many ranges of the table's pages each connection
// reading in chunks reads in turn: parts small enough that
// Options.Progress moves during a long read, few enough that their
// statements cost nothing beside the scan.
const partsPerWorker = 8

func (o Options) withDefaults() Options {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if o.Column == "" {
		o.Column = DefaultColumn
	}
	return o
}

// Check validates the options without a database.
func (o Options) Check() error {
	o = o.withDefaults()
	if o.Layout.IsZero() {
		return snowflake.ErrZeroLayout
	}
	names := []struct{ field, value string }{{"schema", o.Schema}, {"table", o.Table}, {"column", o.Column}}
	if o.TimeColumn != "" {
		names = append(names, struct{ field, value string }{"time column", o.TimeColumn})
	}
	for _, n := range names {
		if err := ValidateName(n.field, n.value); err != nil {
			return err
		}
	}
	for _, d := range []struct {
		f string
		v time.Duration
	}{{"future tolerance", o.FutureTolerance}, {"skew threshold", o.SkewThreshold}} {
		if d.v < 0 || d.v > MaxDuration {
			return &DurationError{Field: d.f, Value: d.v, Min: 0, Max: MaxDuration}
		}
	}
	return nil
}

// A Node is one (datacenter, machine) found in the table.
type Node struct {
	Datacenter int64     `json:"datacenter_id"`
	Machine    int64     `json:"machine_id"`
	Rows       int64     `json:"rows"`
	First      time.Time `json:"first_time"`
	Last       time.Time `json:"last_time"`
	Future     int64     `json:"future"`
	Skew       *Skew     `json:"skew,omitempty"`
}

// Skew compares each valid ID's time with the time column: ID time minus
// column time, in milliseconds (positive: the ID is later).
type Skew struct {
	Column      string  `json:"column,omitempty"`
	ThresholdMs int64   `json:"threshold_ms"`
	P50AbsMs    float64 `json:"p50_abs_ms"` // of |skew|
	P99AbsMs    float64 `json:"p99_abs_ms"` // of |skew|
	MinMs       float64 `json:"min_ms"`
	MaxMs       float64 `json:"max_ms"`
	MaxAbsMs    float64 `json:"max_abs_ms"`
	Beyond      int64   `json:"beyond_threshold"` // rows with |skew| > threshold
	NullTimes   int64   `json:"null_times"`       // valid IDs whose time column is NULL
}

// A Report is what Run found.
type Report struct {
	Schema            string     `json:"schema"`
	Table             string     `json:"table"`
	Column            string     `json:"column"`
	Layout            string     `json:"layout"`
	Now               time.Time  `json:"now"` // the database's now()
	FutureToleranceMs int64      `json:"future_tolerance_ms"`
	FutureAfter       time.Time  `json:"future_after"`           // Now + tolerance: IDs dated after it are future
	Rows              int64      `json:"rows"`                   // every row, NULL IDs included
	Nulls             int64      `json:"nulls"`                  // rows whose ID is NULL: not an anomaly
	Legacy            int64      `json:"legacy"`                 // rows below LegacyBelow: from before a conversion, not IDs
	LegacyBelow       string     `json:"legacy_below,omitempty"` // Options.LegacyBelow, as a string (JSON numbers lose precision)
	Invalid           int64      `json:"invalid"`                // negative IDs: they decode to nothing in any layout
	Future            int64      `json:"future"`
	MinTime           *time.Time `json:"min_time"` // of the valid IDs; nil when there are none
	MaxTime           *time.Time `json:"max_time"`
	Nodes             []Node     `json:"nodes"`
	Skew              *Skew      `json:"skew,omitempty"`
	Distributed       bool       `json:"distributed,omitempty"` // a Citus distributed table, aggregated on the workers
}

// Clean reports whether the table has no future and no invalid IDs.
func (r *Report) Clean() bool { return r.Future == 0 && r.Invalid == 0 }

// Query returns the audit statement for o (with defaults applied). Its one
// parameter, $1, is the future tolerance in milliseconds (int8).
//
// Each row is one group: g is 0 for a group of the node key (node NULL
// for the NULL and negative IDs, else the datacenter and machine bits,
// (id >> sequence bits) & (2^(datacenter+machine bits)-1)), and with a time
// column 1 for the whole table. Its columns are node, g, rows, nulls,
// invalid, future, min_id, max_id, now_ms, and with a time column
// skew_p50, skew_p99, skew_min, skew_max, skew_maxabs, beyond and
// null_times (the skew in milliseconds, ID time minus column time).
//
// The cost is one sequential scan with, per row, the node key (a CASE, a
// shift and a mask) and a few FILTERed counts, aggregated by hash: min
// and max of the ID are its min and max time within a node, and "future"
// compares the ID with the last ID before the cut-off, worked out once.
//
// With a time column the rows are grouped by node and by a bucket of the
// absolute skew, floor(ln(1 + |skew|) * 1000) (HistogramBucketsPerE per
// factor e, so 0.1% wide), still by hash; windows over those few groups
// then find, per node and for the table, the first bucket where the
// cumulative count reaches 50% and 99%, and report the largest |skew| in
// it: percentile_disc to within 0.1%. (percentile_cont, an ordered-set
// aggregate, would sort every row: 4 to 5 times slower on 3M rows.)
func Query(o Options) string { return buildQuery(o, false) }

// chunkQuery is Query over one range of the table's pages: its $2 is the
// database's now in Unix milliseconds (the same for every chunk), and $3
// and $4 the first tid of the range and the first after it. With a time
// column it stops at the histogram (one row per node and skew bucket, as
// hist reads them), which chunks add up before the percentiles.
func chunkQuery(o Options) string { return buildQuery(o, true) }

func buildQuery(o Options, chunk bool) string {
	o = o.withDefaults()
	l := o.Layout
	op := func(s string) string { return " OPERATOR(pg_catalog." + s + ") " }
	i8 := func(n int64) string { return fmt.Sprintf("%d::pg_catalog.int8", n) }
	tsShift := l.Shift(snowflake.FieldTimestamp)
	nodeMask := int64(1)<<(l.Bits(snowflake.FieldDatacenter)+l.Bits(snowflake.FieldMachine)) - 1
	maxDelta := int64(1)<<l.Bits(snowflake.FieldTimestamp) - 1
	lowMask := int64(1)<<tsShift - 1
	timed := o.TimeColumn != ""

	nowMs := "(" + nowMsSQL + ")"
	var conds []string
	if chunk {
		nowMs = "$2::pg_catalog.int8"
		conds = append(conds, "r.ctid"+op(">=")+"$3::pg_catalog.tid AND r.ctid"+op("<")+"$4::pg_catalog.tid")
	}
	if o.LegacyBelow != 0 {
		conds = append(conds, legacyOut(o, op))
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	// The last ID dated at most now + tolerance: its offset from the epoch
	// clamped to the layout's (an offset of -1 gives the ID -1: every ID is
	// after it; the largest offset gives the largest ID: none is).
	cutoff := fmt.Sprintf("(SELECT (LEAST(GREATEST(%s%s$1::pg_catalog.int8%s%s, '-1'::pg_catalog.int8), %s)%s%d)%s%s)",
		nowMs, op("+"), op("-"), i8(l.Epoch()), i8(maxDelta), op("<<"), tsShift, op("|"), i8(lowMask))

	// d: one row per table row, its ID (v), node key and, with a time
	// column, the skew and its bucket.
	valid := "CASE WHEN x.v" + op(">=") + "0 THEN "
	var d strings.Builder
	fmt.Fprintf(&d, "(SELECT x.v,\n    %s(x.v%s%d)%s%s END AS node", valid, op(">>"), l.Bits(snowflake.FieldSequence), op("&"), i8(nodeMask))
	src := "r." + pgident.Quote(o.Column) + "::pg_catalog.int8 AS v"
	if timed {
		src += ", r." + pgident.Quote(o.TimeColumn) + " AS t"
		fmt.Fprintf(&d, ",\n    x.t,\n    %s((x.v%s%d)%s%s)::pg_catalog.float8%s(pg_catalog.date_part('epoch'::pg_catalog.text, x.t)%s1000::pg_catalog.float8) END AS skew",
			valid, op(">>"), tsShift, op("+"), i8(l.Epoch()), op("-"), op("*"))
	}
	// OFFSET 0 keeps each subquery apart: flattened, PostgreSQL would
	// compute the skew (and the node key) once for every reference to it,
	// and estimate one group per row. Not on a distributed table, where
	// it would keep Citus from aggregating on the workers: each worker's
	// shards are small, and the references cost less than the rows.
	apart := " OFFSET 0"
	if o.Distributed {
		apart = ""
	}
	fmt.Fprintf(&d, "\n  FROM (SELECT %s FROM %s.%s AS r%s) AS x%s) AS d", src, pgident.Quote(o.Schema), pgident.Quote(o.Table), where, apart)
	from := d.String()
	if timed {
		from = fmt.Sprintf("(SELECT d.*, pg_catalog.abs(d.skew) AS a, pg_catalog.floor(pg_catalog.ln(1::pg_catalog.float8%spg_catalog.abs(d.skew))%s%d::pg_catalog.float8)::pg_catalog.int8 AS b\n  FROM %s%s) AS d",
			op("+"), op("*"), HistogramBucketsPerE, from, apart)
	}

	var b strings.Builder
	b.WriteString("SELECT d.node, ")
	if timed {
		b.WriteString("d.b")
	} else {
		b.WriteString("0")
	}
	b.WriteString(" AS g,\n  pg_catalog.count(*) AS rows,\n")
	b.WriteString("  pg_catalog.count(*) FILTER (WHERE d.v IS NULL) AS nulls,\n")
	fmt.Fprintf(&b, "  pg_catalog.count(*) FILTER (WHERE d.v%s0) AS invalid,\n", op("<"))
	fmt.Fprintf(&b, "  pg_catalog.count(*) FILTER (WHERE d.v%s%s) AS future,\n", op(">"), cutoff)
	fmt.Fprintf(&b, "  pg_catalog.min(d.v) FILTER (WHERE d.v%s0) AS min_id, pg_catalog.max(d.v) AS max_id,\n", op(">="))
	fmt.Fprintf(&b, "  %s AS now_ms", nowMs)
	if !timed {
		fmt.Fprintf(&b, "\nFROM %s\nGROUP BY d.node", from)
		return b.String()
	}
	abs := "d.a"
	fmt.Fprintf(&b, ",\n  pg_catalog.count(d.skew) AS sn, pg_catalog.max(%s) AS amax, pg_catalog.min(d.skew) AS smin, pg_catalog.max(d.skew) AS smax,\n", abs)
	fmt.Fprintf(&b, "  pg_catalog.count(*) FILTER (WHERE %s%s%d::pg_catalog.float8) AS beyond,\n", abs, op(">"), o.SkewThreshold.Milliseconds())
	fmt.Fprintf(&b, "  pg_catalog.count(*) FILTER (WHERE d.v%s0 AND d.t IS NULL) AS null_times", op(">="))
	fmt.Fprintf(&b, "\nFROM %s\nGROUP BY d.node, d.b", from)
	h := b.String()
	if chunk {
		return h
	}

	// h is MATERIALIZED so that its aggregate stays a hash over the table:
	// inlined, the planner sorts the whole table to feed c's windows in
	// order (4 s instead of 1 on 3M rows).
	// c: the histogram with cumulative counts per node (cn of tn) and for
	// the table (ca of ta), and bmax, the largest |skew| in the bucket
	// across the nodes. The first bucket whose cumulative count reaches q
	// holds the percentile; its largest |skew| (amax or bmax, which grow
	// with the bucket) is the one reported.
	c := "SELECT h.*,\n  pg_catalog.sum(h.sn) OVER (PARTITION BY h.node ORDER BY h.g) AS cn, pg_catalog.sum(h.sn) OVER (PARTITION BY h.node) AS tn,\n" +
		"  pg_catalog.sum(h.sn) OVER (ORDER BY h.g) AS ca, pg_catalog.sum(h.sn) OVER () AS ta,\n  pg_catalog.max(h.amax) OVER (PARTITION BY h.g) AS bmax\nFROM h"
	// COALESCE: over an empty table the last row (the whole table's)
	// has no rows to add up, and sum() would be NULL.
	sum := func(col string) string { return "COALESCE(pg_catalog.sum(c." + col + "), 0)::pg_catalog.int8" }
	final := func(node, g, cum, tot, max string) string {
		pct := func(q string) string {
			return fmt.Sprintf("pg_catalog.min(c.%s) FILTER (WHERE c.%s%s(%s::pg_catalog.numeric%sc.%s))", max, cum, op(">="), q, op("*"), tot)
		}
		return fmt.Sprintf("SELECT %s, %s, %s, %s, %s, %s, pg_catalog.min(c.min_id), pg_catalog.max(c.max_id), %s,\n  %s, %s, pg_catalog.min(c.smin), pg_catalog.max(c.smax), pg_catalog.max(c.amax), %s, %s\nFROM c",
			node, g, sum("rows"), sum("nulls"), sum("invalid"), sum("future"), nowMs, pct("0.5"), pct("0.99"), sum("beyond"), sum("null_times"))
	}
	return "WITH h AS MATERIALIZED (\n" + h + "\n),\nc AS (\n" + c + "\n)\n" + final("c.node", "0", "cn", "tn", "amax") + "\nGROUP BY c.node\nUNION ALL\n" + final("NULL::pg_catalog.int8", "1", "ca", "ta", "bmax")
}

// legacyOut is the condition that leaves the legacy values out.
func legacyOut(o Options, op func(string) string) string {
	c := "r." + pgident.Quote(o.Column)
	return fmt.Sprintf("(%s IS NULL OR %s%s%d::pg_catalog.int8)", c, c, op(">="), o.LegacyBelow)
}

// countLegacy counts the legacy values of o's column (an index range scan
// where the column has an index, as a key does).
func countLegacy(ctx context.Context, tx *sql.Tx, o Options) (int64, error) {
	var n int64
	err := tx.QueryRowContext(ctx, fmt.Sprintf("SELECT pg_catalog.count(*) FROM %s.%s AS r WHERE r.%s OPERATOR(pg_catalog.<) %d::pg_catalog.int8",
		pgident.Quote(o.Schema), pgident.Quote(o.Table), pgident.Quote(o.Column), o.LegacyBelow)).Scan(&n)
	return n, err
}

// nowMsSQL reads the database's now() in Unix milliseconds. now() is the
// transaction's start, so every statement of Run's transaction reads the
// same value.
const nowMsSQL = "SELECT pg_catalog.floor(pg_catalog.date_part('epoch'::pg_catalog.text, pg_catalog.now()) OPERATOR(pg_catalog.*) 1000::pg_catalog.float8)::pg_catalog.int8"

// HistogramBucketsPerE is how many buckets of the absolute skew Query
// makes per factor e: its percentiles are within 1/HistogramBucketsPerE
// (0.1%) of (1 ms + the true value).
const HistogramBucketsPerE = 1000

// A Querier is what Run reads through: *sql.DB and *sql.Conn are ones.
type Querier interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// Run audits the table o names, in one read-only transaction. It first
// checks the names and looks the table and columns up in pg_catalog (a
// *NotFoundError or *ColumnTypeError when they are missing or of another
// type), then runs Query once, with enable_sort off for the transaction so
// that the planner, which cannot know how few nodes there are and guesses
// one group per row, still aggregates by hash. A large plain table, given
// a *sql.DB, is read in o.Workers ranges of its pages at once, in one
// snapshot, and the parts added up: PostgreSQL's own parallel scan does
// not serve the aggregate, for the same estimate.
func Run(ctx context.Context, db Querier, o Options) (*Report, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	// Repeatable read: a snapshot that chunks read through other
	// connections can import.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if err := readOnlyOwnCode(ctx, tx); err != nil {
		return nil, err
	}
	if err := checkColumn(ctx, tx, o, o.Column, "column", idTypes); err != nil {
		return nil, err
	}
	if err := checkOthersCode(ctx, tx, o); err != nil {
		return nil, err
	}
	if o.TimeColumn != "" {
		if err := checkColumn(ctx, tx, o, o.TimeColumn, "time column", timeTypes); err != nil {
			return nil, err
		}
	}
	if _, err := tx.ExecContext(ctx, "SET LOCAL enable_sort = off"); err != nil {
		return nil, err
	}
	if o.Distributed, err = catalog.CitusDistributed(ctx, catalog.DB(tx), o.Schema, o.Table); err != nil {
		return nil, err
	}
	var r *Report
	if pages, ok := chunkable(ctx, tx, db, o); ok {
		r, err = scanChunks(ctx, tx, db.(conner), o, pages)
	} else {
		r, err = scan(ctx, tx, o, Query(o), o.FutureTolerance.Milliseconds())
	}
	if err != nil {
		return nil, fmt.Errorf("audit %s.%s: %w", o.Schema, o.Table, err)
	}
	r.Distributed = o.Distributed
	if o.LegacyBelow != 0 {
		if r.Legacy, err = countLegacy(ctx, tx, o); err != nil {
			return nil, fmt.Errorf("audit %s.%s: count the legacy values: %w", o.Schema, o.Table, err)
		}
		r.Rows += r.Legacy
		r.LegacyBelow = strconv.FormatInt(o.LegacyBelow, 10)
	}
	return r, tx.Commit()
}

// A conner hands out connections of its own: *sql.DB.
type conner interface {
	Conn(ctx context.Context) (*sql.Conn, error)
}

// chunkable returns the table's size in pages, and whether Run should
// read it in chunks: more than one worker, a plain table
// of MinChunkPages or more, and a db that hands out connections.
func chunkable(ctx context.Context, tx *sql.Tx, db Querier, o Options) (int64, bool) {
	if _, ok := db.(conner); !ok || o.workers() < 2 {
		return 0, false
	}
	var pages int64
	var plain bool
	err := tx.QueryRowContext(ctx, `SELECT c.relkind OPERATOR(pg_catalog.=) 'r',
		pg_catalog.pg_relation_size(c.oid) OPERATOR(pg_catalog./) pg_catalog.current_setting('block_size')::pg_catalog.int8
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
	WHERE n.nspname OPERATOR(pg_catalog.=) $1 AND c.relname OPERATOR(pg_catalog.=) $2`, o.Schema, o.Table).Scan(&plain, &pages)
	return pages, err == nil && plain && pages >= minChunkPages
}

func (o Options) workers() int {
	if o.Workers == 0 {
		return DefaultWorkers
	}
	return o.Workers
}

// scanChunks reads the table on o.workers() connections at once, each
// partsPerWorker ranges of its pages in turn: the first worker in tx, the
// others each on a connection of db's own, in a transaction that imports
// tx's snapshot (so all see the same rows), and merges what they found.
// Every part dates "future" from tx's now().
func scanChunks(ctx context.Context, tx *sql.Tx, db conner, o Options, pages int64) (*Report, error) {
	var snapshot string
	var nowMs int64
	if err := tx.QueryRowContext(ctx, "SELECT pg_catalog.pg_export_snapshot(), ("+nowMsSQL+")").Scan(&snapshot, &nowMs); err != nil {
		return nil, err
	}
	n := int64(o.workers())
	parts := n * partsPerWorker
	q := chunkQuery(o)
	tol := o.FutureTolerance.Milliseconds()
	bound := func(i int64) string {
		if i == parts {
			return "(4294967295,65535)" // the last tid there is: past every row
		}
		return fmt.Sprintf("(%d,0)", i*pages/parts)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Each part's rows (with a time column its histogram), added up
	// before the percentiles.
	hists := make([][]bucket, parts)
	var mu sync.Mutex
	done := 0
	// read reads, in tx, worker w's parts: w, w+n, w+2n and so on.
	read := func(w int64, tx *sql.Tx) error {
		for i := w; i < parts; i += n {
			h, err := histogram(ctx, tx, o, q, tol, nowMs, bound(i), bound(i+1))
			if err != nil {
				return err
			}
			hists[i] = h
			if o.Progress != nil {
				mu.Lock()
				done++
				o.Progress(done, int(parts))
				mu.Unlock()
			}
		}
		return nil
	}
	var first firstError
	var wg sync.WaitGroup
	for i := int64(1); i < n; i++ {
		wg.Go(func() {
			first.set(inImported(ctx, db, snapshot, func(tx *sql.Tx) error { return read(i, tx) }), cancel)
		})
	}
	first.set(read(0, tx), cancel)
	wg.Wait()
	if first.err != nil {
		return nil, first.err
	}
	return build(o, finals(hists, o.TimeColumn != ""), nowMs), nil
}

// A firstError keeps the first error of the chunks that read at once:
// the cause. The others' errors come after it cancelled them (a chunk's
// connection that failed with "context canceled"), and would only bury
// the cause.
type firstError struct {
	once sync.Once
	err  error
}

// set keeps err if it is the first, and then calls cancel, which stops
// the other chunks. A nil err is no error.
func (f *firstError) set(err error, cancel func()) {
	if err == nil {
		return
	}
	f.once.Do(func() {
		f.err = err
		cancel()
	})
}

// inImported runs read on a connection of db's own, in a read-only
// transaction with snapshot imported.
func inImported(ctx context.Context, db conner, snapshot string, read func(*sql.Tx) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// The snapshot's name comes from the server; as a literal all the same.
	if _, err := tx.ExecContext(ctx, "SET TRANSACTION SNAPSHOT "+pgident.QuoteLiteral(snapshot)); err != nil {
		return fmt.Errorf("share the snapshot: %w", err)
	}
	if err := readOnlyOwnCode(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "SET LOCAL enable_sort = off"); err != nil {
		return err
	}
	return read(tx)
}

// scan runs query, Query(o) or chunkQuery(o), with args, and reads its
// rows into a report.
func scan(ctx context.Context, tx *sql.Tx, o Options, query string, args ...any) (*Report, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var fs []final
	for rows.Next() {
		var f final
		dest := []any{&f.node, &f.g, &f.rows, &f.nulls, &f.invalid, &f.future, &f.lo, &f.hi, &f.nowMs}
		if o.TimeColumn != "" {
			dest = append(dest, &f.p50, &f.p99, &f.smin, &f.smax, &f.amax, &f.beyond, &f.nullTimes)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Every row has the now() of the query; without a time column an
	// empty table has no row, and the now() is read on its own, in the
	// same transaction (so the same value).
	var nowMs int64
	if len(fs) > 0 {
		nowMs = fs[0].nowMs
	} else if err := tx.QueryRowContext(ctx, nowMsSQL).Scan(&nowMs); err != nil {
		return nil, err
	}
	return build(o, fs, nowMs), nil
}

// A final is one row of Query's result: a node's (g 0; node NULL for the
// NULL and negative IDs) or, with a time column, the whole table's skew
// (g 1).
type final struct {
	node, lo, hi               sql.Null[int64]
	g, rows, nulls, invalid    int64
	future, nowMs              int64
	p50, p99, smin, smax, amax sql.Null[float64]
	beyond, nullTimes          int64
}

// build makes the report of Query's rows, fs, read at the database's
// now(), nowMs (fs may be empty: an empty table).
func build(o Options, fs []final, nowMs int64) *Report {
	l := o.Layout
	r := &Report{Schema: o.Schema, Table: o.Table, Column: o.Column, Layout: l.String(),
		FutureToleranceMs: o.FutureTolerance.Milliseconds(), Nodes: []Node{}}
	mBits := l.Bits(snowflake.FieldMachine)
	var minID, maxID sql.Null[int64]
	for _, f := range fs {
		var skew *Skew
		if o.TimeColumn != "" {
			skew = &Skew{ThresholdMs: o.SkewThreshold.Milliseconds(), P50AbsMs: f.p50.V, P99AbsMs: f.p99.V,
				MinMs: f.smin.V, MaxMs: f.smax.V, MaxAbsMs: f.amax.V, Beyond: f.beyond, NullTimes: f.nullTimes}
		}
		if f.g != 0 { // the whole table, with a time column: its skew
			skew.Column = o.TimeColumn
			r.Skew = skew
			continue
		}
		r.Rows += f.rows
		r.Nulls += f.nulls
		r.Invalid += f.invalid
		r.Future += f.future
		if !f.node.Valid { // the NULL and negative IDs
			continue
		}
		if !minID.Valid || f.lo.V < minID.V {
			minID = f.lo
		}
		if !maxID.Valid || f.hi.V > maxID.V {
			maxID = f.hi
		}
		r.Nodes = append(r.Nodes, Node{Datacenter: f.node.V >> mBits, Machine: f.node.V & (1<<mBits - 1), Rows: f.rows,
			First: idTime(l, f.lo.V), Last: idTime(l, f.hi.V), Future: f.future, Skew: skew})
	}
	r.Now = time.UnixMilli(nowMs).UTC()
	r.FutureAfter = r.Now.Add(time.Duration(r.FutureToleranceMs) * time.Millisecond)
	if minID.Valid {
		lo, hi := idTime(l, minID.V), idTime(l, maxID.V)
		r.MinTime, r.MaxTime = &lo, &hi
	}
	sortNodes(r.Nodes)
	return r
}

// A bucket is one row of chunkQuery's result: a node's IDs, with a time
// column those in one bucket of |skew| (b NULL without a time column, and
// for the IDs without a skew).
type bucket struct {
	node, b, lo, hi      sql.Null[int64]
	rows, nulls, invalid int64
	future, nowMs, sn    int64
	amax, smin, smax     sql.Null[float64]
	beyond, nullTimes    int64
}

// histogram runs chunkQuery(o) with args.
func histogram(ctx context.Context, tx *sql.Tx, o Options, query string, args ...any) ([]bucket, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []bucket
	for rows.Next() {
		var k bucket
		var g int64 // 0: there are no buckets
		dest := []any{&k.node, &g, &k.rows, &k.nulls, &k.invalid, &k.future, &k.lo, &k.hi, &k.nowMs}
		if o.TimeColumn != "" {
			dest = append(dest[:1], &k.b, &k.rows, &k.nulls, &k.invalid, &k.future, &k.lo, &k.hi, &k.nowMs,
				&k.sn, &k.amax, &k.smin, &k.smax, &k.beyond, &k.nullTimes)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// finals works out, from the chunks' rows, the rows Query would have
// returned: each node's counts and, when timed, its skew and the table's,
// with the percentiles as Query finds them (the largest |skew| in the
// first bucket whose cumulative count reaches 50% and 99%).
func finals(parts [][]bucket, timed bool) []final {
	type key struct{ node, b sql.Null[int64] }
	merged := map[key]*bucket{}
	var keys []key
	for _, part := range parts {
		for _, k := range part {
			id := key{k.node, k.b}
			m, ok := merged[id]
			if !ok {
				c := k
				merged[id] = &c
				keys = append(keys, id)
				continue
			}
			m.rows += k.rows
			m.nulls += k.nulls
			m.invalid += k.invalid
			m.future += k.future
			m.sn += k.sn
			m.beyond += k.beyond
			m.nullTimes += k.nullTimes
			m.lo = lesser(m.lo, k.lo)
			m.hi = greater(m.hi, k.hi)
			m.amax = greater(m.amax, k.amax)
			m.smin = lesser(m.smin, k.smin)
			m.smax = greater(m.smax, k.smax)
		}
	}
	// In bucket order, NULL last, as Query's windows order them.
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i].b, keys[j].b
		if a.Valid != b.Valid {
			return a.Valid
		}
		return a.V < b.V
	})
	// percentiles returns the 50% and 99% of groups, a run of buckets in
	// order (peers, of equal b, one step): each step's largest |skew|.
	percentiles := func(steps [][]*bucket) (p50, p99 sql.Null[float64]) {
		var total, cum int64
		for _, st := range steps {
			for _, k := range st {
				total += k.sn
			}
		}
		for _, st := range steps {
			var top sql.Null[float64]
			for _, k := range st {
				cum += k.sn
				top = greater(top, k.amax)
			}
			if !p50.Valid && cum*2 >= total {
				p50 = top
			}
			if !p99.Valid && cum*100 >= total*99 {
				p99 = top
			}
		}
		return p50, p99
	}
	add := func(f *final, k *bucket) {
		f.rows += k.rows
		f.nulls += k.nulls
		f.invalid += k.invalid
		f.future += k.future
		f.beyond += k.beyond
		f.nullTimes += k.nullTimes
		f.lo = lesser(f.lo, k.lo)
		f.hi = greater(f.hi, k.hi)
		f.amax = greater(f.amax, k.amax)
		f.smin = lesser(f.smin, k.smin)
		f.smax = greater(f.smax, k.smax)
		f.nowMs = k.nowMs
	}
	var out []final
	byNode := map[sql.Null[int64]]int{}
	nodeSteps := map[sql.Null[int64]][][]*bucket{}
	table := final{g: 1}
	var tableSteps [][]*bucket
	for i, id := range keys {
		k := merged[id]
		j, ok := byNode[id.node]
		if !ok {
			j = len(out)
			byNode[id.node] = j
			out = append(out, final{node: id.node})
		}
		add(&out[j], k)
		nodeSteps[id.node] = append(nodeSteps[id.node], []*bucket{k})
		add(&table, k)
		if i > 0 && keys[i-1].b == id.b {
			tableSteps[len(tableSteps)-1] = append(tableSteps[len(tableSteps)-1], k)
		} else {
			tableSteps = append(tableSteps, []*bucket{k})
		}
	}
	if !timed {
		return out
	}
	for i := range out {
		out[i].p50, out[i].p99 = percentiles(nodeSteps[out[i].node])
	}
	table.p50, table.p99 = percentiles(tableSteps)
	return append(out, table)
}

// lesser and greater are the smaller and the larger of a and b; NULL
// (not Valid) counts as neither, as min() and max() ignore NULLs.
func lesser[T cmp.Ordered](a, b sql.Null[T]) sql.Null[T] {
	if !a.Valid || (b.Valid && b.V < a.V) {
		return b
	}
	return a
}

func greater[T cmp.Ordered](a, b sql.Null[T]) sql.Null[T] {
	if !a.Valid || (b.Valid && b.V > a.V) {
		return b
	}
	return a
}

// idTime is the time of id, non-negative, in l.
func idTime(l snowflake.Layout, id int64) time.Time {
	p, _ := l.Decompose(snowflake.ID(id))
	return p.Time()
}

func sortNodes(ns []Node) {
	for i := 1; i < len(ns); i++ {
		for j := i; j > 0 && less(ns[j], ns[j-1]); j-- {
			ns[j], ns[j-1] = ns[j-1], ns[j]
		}
	}
}

func less(a, b Node) bool {
	if a.Datacenter != b.Datacenter {
		return a.Datacenter < b.Datacenter
	}
	return a.Machine < b.Machine
}

// readOnlyOwnCode sets row security off in tx: a policy that would apply
// to this role (its expressions are the table owner's code, run with this
// role's privileges) fails the read instead of running.
// checkOthersCode refuses a table (or materialized view) whose reading
// would run a function of a role other than this one and superusers:
// planning a read folds the constant parts of its indexes' expressions
// and predicates and of its extended statistics (and of its partitions'
// and children's, which a read reads too, and their CHECK constraints).
// It reads the catalogs only (package otherscode); nothing it finds is
// called.
func checkOthersCode(ctx context.Context, tx *sql.Tx, o Options) error {
	var oid int64
	var owner string
	err := tx.QueryRowContext(ctx, `SELECT c.oid::pg_catalog.int8, c.relowner::pg_catalog.regrole::pg_catalog.text
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
	WHERE n.nspname OPERATOR(pg_catalog.=) $1 AND c.relname OPERATOR(pg_catalog.=) $2`, o.Schema, o.Table).Scan(&oid, &owner)
	if err != nil {
		return fmt.Errorf("look up %s.%s: %w", o.Schema, o.Table, err)
	}
	uses, err := otherscode.FindIn(ctx, tx, otherscode.Tree(oid), otherscode.Options{ForRead: true, NotCurrentRole: true})
	if err != nil {
		return fmt.Errorf("%s.%s: %w", o.Schema, o.Table, err)
	}
	if len(uses) == 0 {
		return nil
	}
	var us []string
	for _, u := range uses {
		us = append(us, u.String())
	}
	return fmt.Errorf("reading %s.%s would run another role's code with this role's privileges (planning a read folds the constant parts of indexes and statistics): %s: %w; audit it as its owner, %s, or give the functions to this role, or drop the objects",
		o.Schema, o.Table, strings.Join(us, "; "), ErrOthersCode, owner)
}

func readOnlyOwnCode(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, "SET LOCAL row_security = off")
	return err
}

// checkColumn looks column up in o's table with bound parameters, and
// checks its type is one of allowed.
func checkColumn(ctx context.Context, db *sql.Tx, o Options, column, kind string, allowed []string) error {
	var typ sql.NullString
	var othersView bool
	var owner string
	// A view's functions run with the reader's privileges: one of another
	// role's would run that role's code as this one (a superuser, say).
	// A table's rows, a materialized view's and a foreign table's run no
	// code of their owner's on a read, and row security is off in the
	// transaction (a policy that would apply fails the read instead).
	err := db.QueryRowContext(ctx, `SELECT c.relkind OPERATOR(pg_catalog.=) 'v' AND c.relowner OPERATOR(pg_catalog.<>) (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER),
		c.relowner::pg_catalog.regrole::pg_catalog.text,
		(SELECT pg_catalog.format_type(a.atttypid, a.atttypmod)
		FROM pg_catalog.pg_attribute a
		WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attname OPERATOR(pg_catalog.=) $3 AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped)
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
	WHERE n.nspname OPERATOR(pg_catalog.=) $1 AND c.relname OPERATOR(pg_catalog.=) $2 AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,v,m,f}'::pg_catalog.char[])`,
		o.Schema, o.Table, column).Scan(&othersView, &owner, &typ)
	if errors.Is(err, sql.ErrNoRows) {
		return &NotFoundError{Kind: "table", Name: o.Schema + "." + o.Table}
	}
	if err != nil {
		return fmt.Errorf("look up %s.%s: %w", o.Schema, o.Table, err)
	}
	if othersView {
		return fmt.Errorf("%s.%s is a view of role %s, and its functions would run with this role's privileges: %w; audit the table under it, or run as %s", o.Schema, o.Table, owner, ErrOthersCode, owner)
	}
	if !typ.Valid {
		return &NotFoundError{Kind: kind, Name: o.Schema + "." + o.Table + "." + column}
	}
	for _, a := range allowed {
		if typ.String == a {
			return nil
		}
	}
	return &ColumnTypeError{Column: column, Type: typ.String, Allowed: allowed}
}

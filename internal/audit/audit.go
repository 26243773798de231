// Package audit checks the Snowflake IDs already stored in a table, inside
// PostgreSQL: one SQL statement reads the table once and aggregates it
// server-side (GROUP BY the decoded node, FILTER for the anomalies,
// percentile_cont for the skew against a time column), so that what comes
// back is one row per node, never one per ID.
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
package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/snowflake"
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
	ErrZeroLayout  = errors.New("no layout")
	ErrBadDuration = errors.New("duration out of range")
)

// A NameError reports a schema, table or column name ValidateName refuses.
type NameError struct {
	Field  string // "schema", "table", "column" or "time column"
	Value  string
	Reason string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("invalid %s name %q: %s", e.Field, e.Value, e.Reason)
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
}

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
	if o.Layout == (snowflake.Layout{}) {
		return ErrZeroLayout
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
	FutureAfter       time.Time  `json:"future_after"` // Now + tolerance: IDs dated after it are future
	Rows              int64      `json:"rows"`         // every row, NULL IDs included
	Nulls             int64      `json:"nulls"`        // rows whose ID is NULL: not an anomaly
	Invalid           int64      `json:"invalid"`      // negative IDs: they decode to nothing in any layout
	Future            int64      `json:"future"`
	MinTime           *time.Time `json:"min_time"` // of the valid IDs; nil when there are none
	MaxTime           *time.Time `json:"max_time"`
	Nodes             []Node     `json:"nodes"`
	Skew              *Skew      `json:"skew,omitempty"`
}

// Clean reports whether the table has no future and no invalid IDs.
func (r *Report) Clean() bool { return r.Future == 0 && r.Invalid == 0 }

// Query returns the audit statement for o (with defaults applied) and
// whether the ID column needs a cast. Its one parameter, $1, is the
// tolerance in milliseconds (int8). It returns the columns: dc, m, g
// (GROUPING: 0 for a node or the NULL/invalid group, 3 for the total),
// rows, nulls, invalid, future, min_ms, max_ms, now_ms, and with a time
// column skew_p50, skew_p99, skew_min, skew_max, skew_maxabs, beyond,
// null_times. The threshold of the skew is a literal from o.
func Query(o Options) string {
	o = o.withDefaults()
	l := o.Layout
	op := func(s string) string { return " OPERATOR(pg_catalog." + s + ") " }
	i8 := func(n int64) string { return fmt.Sprintf("%d::pg_catalog.int8", n) }
	tsShift := l.Shift(snowflake.FieldTimestamp)
	dcShift := l.Shift(snowflake.FieldDatacenter)
	mShift := l.Shift(snowflake.FieldMachine)
	dcMask := l.Max(snowflake.FieldDatacenter)
	mMask := l.Max(snowflake.FieldMachine)
	valid := "CASE WHEN s.v" + op(">=") + "0 THEN "

	src := "x." + pgident.Quote(o.Column) + "::pg_catalog.int8 AS v"
	if o.TimeColumn != "" {
		src += ", x." + pgident.Quote(o.TimeColumn) + " AS t"
	}
	var b strings.Builder
	nowMs := "(SELECT pg_catalog.floor(pg_catalog.date_part('epoch'::pg_catalog.text, pg_catalog.now())" + op("*") + "1000::pg_catalog.float8)::pg_catalog.int8)"
	fmt.Fprintf(&b, "SELECT d.dc, d.m, GROUPING(d.dc, d.m) AS g,\n")
	fmt.Fprintf(&b, "  pg_catalog.count(*) AS rows,\n")
	fmt.Fprintf(&b, "  pg_catalog.count(*) FILTER (WHERE d.v IS NULL) AS nulls,\n")
	fmt.Fprintf(&b, "  pg_catalog.count(*) FILTER (WHERE d.v%s0) AS invalid,\n", op("<"))
	fmt.Fprintf(&b, "  pg_catalog.count(*) FILTER (WHERE d.ms%s(SELECT %s%s$1::pg_catalog.int8)) AS future,\n", op(">"), nowMs, op("+"))
	fmt.Fprintf(&b, "  pg_catalog.min(d.ms) AS min_ms, pg_catalog.max(d.ms) AS max_ms,\n")
	fmt.Fprintf(&b, "  %s AS now_ms", nowMs)
	if o.TimeColumn != "" {
		abs := "pg_catalog.abs(d.skew)"
		fmt.Fprintf(&b, ",\n  pg_catalog.percentile_cont(0.5::pg_catalog.float8) WITHIN GROUP (ORDER BY %s) AS skew_p50,\n", abs)
		fmt.Fprintf(&b, "  pg_catalog.percentile_cont(0.99::pg_catalog.float8) WITHIN GROUP (ORDER BY %s) AS skew_p99,\n", abs)
		fmt.Fprintf(&b, "  pg_catalog.min(d.skew) AS skew_min, pg_catalog.max(d.skew) AS skew_max, pg_catalog.max(%s) AS skew_maxabs,\n", abs)
		fmt.Fprintf(&b, "  pg_catalog.count(*) FILTER (WHERE %s%s%d::pg_catalog.float8) AS beyond,\n", abs, op(">"), o.SkewThreshold.Milliseconds())
		fmt.Fprintf(&b, "  pg_catalog.count(*) FILTER (WHERE d.ms IS NOT NULL AND d.t IS NULL) AS null_times")
	}
	fmt.Fprintf(&b, "\nFROM (SELECT s.v,\n")
	fmt.Fprintf(&b, "    %s(s.v%s%d)%s%s END AS ms,\n", valid, op(">>"), tsShift, op("+"), i8(l.Epoch()))
	fmt.Fprintf(&b, "    %s(s.v%s%d)%s%s END AS dc,\n", valid, op(">>"), dcShift, op("&"), i8(dcMask))
	fmt.Fprintf(&b, "    %s(s.v%s%d)%s%s END AS m", valid, op(">>"), mShift, op("&"), i8(mMask))
	if o.TimeColumn != "" {
		fmt.Fprintf(&b, ",\n    s.t,\n    %s((s.v%s%d)%s%s)::pg_catalog.float8%s(pg_catalog.date_part('epoch'::pg_catalog.text, s.t)%s1000::pg_catalog.float8) END AS skew",
			valid, op(">>"), tsShift, op("+"), i8(l.Epoch()), op("-"), op("*"))
	}
	fmt.Fprintf(&b, "\n  FROM (SELECT %s FROM %s.%s AS x) AS s) AS d\n", src, pgident.Quote(o.Schema), pgident.Quote(o.Table))
	fmt.Fprintf(&b, "GROUP BY GROUPING SETS ((d.dc, d.m), ())")
	return b.String()
}

// A Querier runs a query: *sql.DB, *sql.Conn and *sql.Tx are ones.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Run audits the table o names. It first checks the names and looks the
// table and columns up in pg_catalog (a *NotFoundError or
// *ColumnTypeError when they are missing or of another type), then runs
// Query once.
func Run(ctx context.Context, db Querier, o Options) (*Report, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	if err := checkColumn(ctx, db, o, o.Column, "column", idTypes); err != nil {
		return nil, err
	}
	if o.TimeColumn != "" {
		if err := checkColumn(ctx, db, o, o.TimeColumn, "time column", timeTypes); err != nil {
			return nil, err
		}
	}
	rows, err := db.QueryContext(ctx, Query(o), o.FutureTolerance.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("audit %s.%s: %w", o.Schema, o.Table, err)
	}
	defer rows.Close()
	r := &Report{Schema: o.Schema, Table: o.Table, Column: o.Column, Layout: o.Layout.String(),
		FutureToleranceMs: o.FutureTolerance.Milliseconds(), Nodes: []Node{}}
	for rows.Next() {
		var (
			dc, m, minMs, maxMs                 sql.NullInt64
			g, n, nulls, invalid, future, nowMs int64
			p50, p99, smin, smax, smaxabs       sql.NullFloat64
			beyond, nullTimes                   int64
		)
		dest := []any{&dc, &m, &g, &n, &nulls, &invalid, &future, &minMs, &maxMs, &nowMs}
		if o.TimeColumn != "" {
			dest = append(dest, &p50, &p99, &smin, &smax, &smaxabs, &beyond, &nullTimes)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("audit %s.%s: %w", o.Schema, o.Table, err)
		}
		var skew *Skew
		if o.TimeColumn != "" {
			skew = &Skew{ThresholdMs: o.SkewThreshold.Milliseconds(), P50AbsMs: p50.Float64, P99AbsMs: p99.Float64,
				MinMs: smin.Float64, MaxMs: smax.Float64, MaxAbsMs: smaxabs.Float64, Beyond: beyond, NullTimes: nullTimes}
		}
		switch {
		case g != 0: // the total
			r.Now = time.UnixMilli(nowMs).UTC()
			r.FutureAfter = r.Now.Add(time.Duration(r.FutureToleranceMs) * time.Millisecond)
			r.Rows, r.Nulls, r.Invalid, r.Future = n, nulls, invalid, future
			if minMs.Valid {
				lo, hi := time.UnixMilli(minMs.Int64).UTC(), time.UnixMilli(maxMs.Int64).UTC()
				r.MinTime, r.MaxTime = &lo, &hi
			}
			if skew != nil {
				skew.Column = o.TimeColumn
				r.Skew = skew
			}
		case dc.Valid:
			r.Nodes = append(r.Nodes, Node{Datacenter: dc.Int64, Machine: m.Int64, Rows: n,
				First: time.UnixMilli(minMs.Int64).UTC(), Last: time.UnixMilli(maxMs.Int64).UTC(), Future: future, Skew: skew})
		}
		// The group with a NULL node holds the NULL and negative IDs,
		// which the total counts.
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit %s.%s: %w", o.Schema, o.Table, err)
	}
	sortNodes(r.Nodes)
	return r, nil
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

// checkColumn looks column up in o's table with bound parameters, and
// checks its type is one of allowed.
func checkColumn(ctx context.Context, db Querier, o Options, column, kind string, allowed []string) error {
	var typ sql.NullString
	var table bool
	err := db.QueryRowContext(ctx, `SELECT true, (SELECT pg_catalog.format_type(a.atttypid, a.atttypmod)
		FROM pg_catalog.pg_attribute a
		WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attname OPERATOR(pg_catalog.=) $3 AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped)
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
	WHERE n.nspname OPERATOR(pg_catalog.=) $1 AND c.relname OPERATOR(pg_catalog.=) $2 AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,v,m,f}'::pg_catalog.char[])`,
		o.Schema, o.Table, column).Scan(&table, &typ)
	if errors.Is(err, sql.ErrNoRows) {
		return &NotFoundError{Kind: "table", Name: o.Schema + "." + o.Table}
	}
	if err != nil {
		return fmt.Errorf("look up %s.%s: %w", o.Schema, o.Table, err)
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

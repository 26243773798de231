package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/audit"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/convert"
)

const auditHelp = `
sfgen audit --dsn URL --table T [--column id] [--table-schema S] [--layout L] [--time-column C] [--workers N] [--json]

Checks the Snowflake IDs already stored in a table. SQL reads the table
once and aggregates it in PostgreSQL by hash (one row per node comes back,
never one per ID): one sequential scan, which for a plain table of 8 MB or
more --workers connections (2 unless told) share, each a range of its
pages, all in one snapshot (docs/verify.md gives the cost against a SELECT
count(*)). A Citus distributed table, audited through the coordinator, is
aggregated on the workers, each over its shards: a few rows per shard
come back to the coordinator.

It reports the rows; each node found (datacenter_id, machine_id, rows,
first and last time); the IDs dated after the database's now() plus
--future-tolerance ("future"); the invalid IDs (negative: every layout
fills the 63 low bits of a bigint, so any non-negative value decodes and a
negative one decodes to nothing); NULL IDs, counted apart and not an
anomaly; the earliest and latest time. With --time-column it compares each
ID's time with that column (ID time minus column time): p50 and p99 of the
absolute skew (percentile_disc to within 0.1%, from a log histogram), its
min and max, and the rows beyond --skew-threshold (per node too in --json).
And, when there are any, the expired leases of the layout (in any schema
of the database with sfgen's leases, release 4 and later) whose
high-water mark is more than a second ahead of the database's clock: the
node's next holder will date its IDs that far ahead; and the schemas
whose lease table this role may not read.

After 'sfgen convert' moved the column to snowflake_next_id(), the values
below the first ID it made are "legacy" (the serial or identity values
from before): counted apart ("legacy" in --json), not as IDs, nodes or
anomalies. Only sfgen's owner may read where convert records that; for
another role audit says "legacy not read" and counts them as IDs.

It decodes the IDs with the layout of the sfgen generator the column's
default calls (a --layout that disagrees is refused, exit 2); without
one, with --layout's, or else with Twitter's, which the report's first
line then says it assumed (layout_from in --json: default, flag or
assumed).

It runs no other role's code: it refuses a view of another role, and a
table whose indexes, extended statistics, constraints, policies or column
types reach a function of a role other than this one and superusers
(planning the read would fold their constant parts, calling it), naming
the table, the object, the function and its owner (exit 2): audit such a
table as its owner.

The ID column must be bigint, integer or smallint, the time column
timestamp with or without time zone. Names are matched exactly as given
(as if quoted: --table Orders is not orders), looked up in pg_catalog and
always quoted in the SQL. --table-schema is the table's schema; sfgen's
is the one the column's default calls. --schema, its older spelling
here, still names the table's schema and warns (in every other command
--schema names sfgen's schema).

On a terminal, for a table of about 100,000 rows or more (pg_class's
estimate), a line on stderr says it is reading and for how long;
PostgreSQL reports no progress of a single SELECT. Read in chunks
(--workers 2 or more, a plain table of 8 MB or more), each connection
reads 8 ranges of pages in turn, and the line counts them and says about
how long the rest will take.

Exit status: 0 clean; 1 when it finds future or invalid IDs (or cannot
reach the database); 2 on bad usage, which includes a table or column that
does not exist or is of another type, and a refusal to run another
role's code. Skew beyond the threshold is
reported, not an error; so are lease marks ahead.

Examples:
  sfgen audit --dsn postgres://app@localhost/app --table orders
  sfgen audit --table events --column event_id --table-schema app --time-column created_at
  sfgen audit --table users --layout discord --future-tolerance 5s --json
`

func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("audit", auditHelp, stdout, stderr)
	layout, code, done := c.layoutVar(args)
	if done {
		return code
	}
	dsnFlag := c.fs.String("dsn", "", dsnHelp)
	table := c.fs.String("table", "", "the `TABLE` to audit (required)")
	column := c.fs.String("column", audit.DefaultColumn, "the `COLUMN` that holds the IDs")
	schema := c.tableSchemaVar("the table's `SCHEMA`", "audit finds sfgen's from the column's default")
	timeColumn := c.fs.String("time-column", "", "compare each ID's time with this timestamp `COLUMN`")
	tolerance := c.fs.Duration("future-tolerance", audit.DefaultFutureTolerance, "an ID dated after the database's now() plus `D` is future")
	threshold := c.fs.Duration("skew-threshold", audit.DefaultSkewThreshold, "with --time-column, count the rows whose |skew| exceeds `D`")
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	workers := c.intVar("workers", "read a large table through `N` connections at once, each ranges of its pages in turn, in one snapshot (1: one statement)", audit.DefaultWorkers, 1, 64)
	if code, done := c.parseFlags(args); done {
		return code
	}
	if *table == "" {
		return c.usageError("--table is required; see 'sfgen audit --help'")
	}
	if *timeColumn == "" && c.flagSet("skew-threshold") {
		return c.usageError("--skew-threshold needs --time-column")
	}
	o := audit.Options{Schema: *schema, Table: *table, Column: *column, TimeColumn: *timeColumn,
		Layout: layout.layout, FutureTolerance: *tolerance, SkewThreshold: *threshold, Workers: workers.Int()}
	if err := o.Check(); err != nil {
		return c.usageError("%v", err)
	}
	db, dsn, code, ok := c.requireDB(ctx, *dsnFlag)
	if !ok {
		return code
	}
	defer db.Close()
	// The layout of the generator the column defaults to (the report's
	// first line names the layout it decoded with); a --layout that
	// disagrees with it is refused. Without such a default, --layout's,
	// or Twitter's, which the report then says it assumed.
	from, note := layoutFromFlag, ""
	if !layout.set {
		from, note = layoutAssumed, " (assumed: the column's default calls no sfgen generator; --layout names another)"
	}
	if gen, spec, found, err := catalog.DefaultGenerator(ctx, catalog.DB(db), o.Schema, o.Table, o.Column); err != nil {
		return c.fail("read %s.%s.%s's default: %s", o.Schema, o.Table, o.Column, redactErr(err, dsn))
	} else if l, perr := snowflake.ParseLayout(spec); found && perr == nil {
		if layout.set && layout.layout != l {
			return c.usageError("%s.%s.%s defaults to schema %s's generator, of layout %s, not --layout %s: leave --layout out", o.Schema, o.Table, o.Column, gen, describeLayout(l), describeLayout(layout.layout))
		}
		layout.layout, o.Layout = l, l
		from, note = layoutFromDefault, fmt.Sprintf(" (the column's default: schema %s's generator)", gen)
	}
	legacy, err := convert.Legacy(ctx, db, o.Schema, o.Table, o.Column)
	if err != nil {
		legacy.Unread = append(legacy.Unread, redactErr(err, dsn))
	}
	o.LegacyBelow = legacy.FirstID
	stop := func() {}
	if isTerminal(c.stderr) {
		stop, o.Progress = c.auditProgress(ctx, db, o)
	}
	r, err := audit.Run(ctx, db, o)
	stop()
	switch {
	case errors.Is(err, audit.ErrNotFound), errors.Is(err, audit.ErrColumnType), errors.Is(err, audit.ErrInvalidName), errors.Is(err, audit.ErrOthersCode):
		return c.usageError("%v", err)
	case err != nil:
		return c.fail("%s%s", redactErr(err, dsn), selectHint(err, o))
	}
	ahead, unread, err := aheadLeases(ctx, db, layout.layout)
	if err != nil {
		fmt.Fprintf(c.stderr, "sfgen audit: lease marks not read: %s\n", redactErr(err, dsn))
	}
	if *asJSON {
		if code := c.printJSON(struct {
			*audit.Report
			LayoutName   string               `json:"layout_name"`
			LayoutFrom   string               `json:"layout_from"`
			LeasesAhead  []catalog.AheadLease `json:"leases_ahead"`
			LeasesUnread []string             `json:"leases_unread,omitempty"`
			LegacyUnread []string             `json:"legacy_unread,omitempty"`
			Clean        bool                 `json:"clean"`
		}{r, layoutArg(layout.layout), from, ahead, unread, legacy.Unread, r.Clean()}); code != exitOK {
			return code
		}
	} else {
		printAudit(stdout, r, layoutArg(layout.layout)+note, ahead, unread, legacy)
	}
	if !r.Clean() {
		return exitFail
	}
	return exitOK
}

// selectHint is what to do when audit's read of the table was refused
// for want of SELECT on it: "; the role needs SELECT on SCHEMA.TABLE";
// "" for any other error.
func selectHint(err error, o audit.Options) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" || !strings.HasPrefix(pe.Message, "permission denied for table ") {
		return ""
	}
	return fmt.Sprintf("; audit reads every row: the role needs SELECT on %s.%s", o.Schema, o.Table)
}

// Where the layout audit decodes with comes from, as --json's
// layout_from says it.
const (
	layoutFromDefault = "default" // the generator the column's default calls
	layoutFromFlag    = "flag"    // --layout, the column having no such default
	layoutAssumed     = "assumed" // Twitter's, with neither
)

func fmtTime(t time.Time) string { return t.Format("2006-01-02T15:04:05.000Z") }

// aheadLeases reads, on one connection of db, the lease rows of layout l
// whose high-water mark is ahead of the database's clock
// (catalog.AheadLeases); never nil, for --json.
func aheadLeases(ctx context.Context, db *sql.DB, l snowflake.Layout) ([]catalog.AheadLease, []string, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return []catalog.AheadLease{}, nil, err
	}
	defer conn.Close()
	ahead, unread, err := catalog.AheadLeases(ctx, catalog.DB(conn), l)
	if ahead == nil {
		ahead = []catalog.AheadLease{}
	}
	return ahead, unread, err
}

func printAudit(w io.Writer, r *audit.Report, layoutName string, ahead []catalog.AheadLease, unread []string, legacy convert.LegacyBound) {
	fmt.Fprintf(w, "table     %s.%s, column %s, layout %s\n", r.Schema, r.Table, r.Column, layoutName)
	if r.Distributed {
		fmt.Fprintf(w, "citus     distributed table: aggregated on the workers, one row per shard and node back\n")
	}
	fmt.Fprintf(w, "rows      %d (%d NULL)\n", r.Rows, r.Nulls)
	if legacy.Found {
		fmt.Fprintf(w, "legacy    %d (below %s, the first ID after 'sfgen convert' moved the column to %s.snowflake_next_id(): values from before, not IDs)\n",
			r.Legacy, r.LegacyBelow, legacy.Sfgen)
	}
	for _, u := range legacy.Unread {
		fmt.Fprintf(w, "legacy    not read: %s\n", u)
	}
	if r.MinTime != nil {
		fmt.Fprintf(w, "time      %s to %s (min and max)\n", fmtTime(*r.MinTime), fmtTime(*r.MaxTime))
	}
	fmt.Fprintf(w, "future    %d (dated after %s: the database's now() %s plus %v)\n", r.Future,
		fmtTime(r.FutureAfter), fmtTime(r.Now), time.Duration(r.FutureToleranceMs)*time.Millisecond)
	fmt.Fprintf(w, "invalid   %d (negative)\n", r.Invalid)
	fmt.Fprintf(w, "nodes     %d\n", len(r.Nodes))
	if len(r.Nodes) > 0 {
		fmt.Fprintf(w, "  %13s %10s %12s  %-24s  %-24s  %s\n", "datacenter_id", "machine_id", "rows", "first", "last", "future")
		for _, n := range r.Nodes {
			fmt.Fprintf(w, "  %13d %10d %12d  %-24s  %-24s  %d\n", n.Datacenter, n.Machine, n.Rows, fmtTime(n.First), fmtTime(n.Last), n.Future)
		}
	}
	if s := r.Skew; s != nil {
		fmt.Fprintf(w, "skew      ID time - %s: |skew| p50 %s p99 %s max %s; min %s max %s; %d beyond %v; %d with %s NULL\n",
			s.Column, fmtMs(s.P50AbsMs), fmtMs(s.P99AbsMs), fmtMs(s.MaxAbsMs), fmtMs(s.MinMs), fmtMs(s.MaxMs),
			s.Beyond, time.Duration(s.ThresholdMs)*time.Millisecond, s.NullTimes, s.Column)
	}
	for _, l := range ahead {
		fmt.Fprintf(w, "leases    node datacenter %d, machine %d (schema %s): its high-water mark is %.1f s ahead of the database's clock (its last holder, %s, ran ahead), so the node's next holder dates its IDs that far ahead\n",
			l.Datacenter, l.Machine, l.Schema, float64(l.AheadMs)/1000, l.Holder)
	}
	for _, u := range unread {
		fmt.Fprintf(w, "leases    not read: %s\n", u)
	}
	var bad []string
	if r.Future > 0 {
		bad = append(bad, fmt.Sprintf("%d future", r.Future))
	}
	if r.Invalid > 0 {
		bad = append(bad, fmt.Sprintf("%d invalid", r.Invalid))
	}
	if len(bad) == 0 {
		fmt.Fprintln(w, "OK: no future or invalid IDs")
	} else {
		fmt.Fprintf(w, "FAIL: %s\n", strings.Join(bad, ", "))
	}
}

// fmtMs writes v milliseconds to the microsecond, without an exponent.
func fmtMs(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64) + "ms" }

// progressMinRows is the estimated size from which audit shows that it
// is reading, on a terminal.
const progressMinRows = 100_000

// auditProgress shows, on a terminal, that the audit is reading a large
// table: its estimated rows (pg_class.reltuples), the time so far and,
// where it reads in chunks, the parts read and an estimate of the time
// left (PostgreSQL reports no progress of a single SELECT). It returns
// stop, which clears the line, and the audit.Options.Progress that
// counts the parts (nil below progressMinRows).
func (c *cli) auditProgress(ctx context.Context, db *sql.DB, o audit.Options) (stop func(), progress func(done, total int)) {
	schema, table := o.Schema, o.Table
	if schema == "" {
		schema = audit.DefaultSchema
	}
	var rows float64
	err := db.QueryRowContext(ctx, `SELECT c.reltuples FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
		WHERE n.nspname OPERATOR(pg_catalog.=) $1 AND c.relname OPERATOR(pg_catalog.=) $2`, schema, table).Scan(&rows)
	if err != nil || rows < progressMinRows {
		return func() {}, nil
	}
	var p partsDone
	ticker := time.NewTicker(250 * time.Millisecond)
	start := time.Now()
	clear := showProgress(c.stderr, fmt.Sprintf("sfgen audit: reading %s.%s (about %d rows)", schema, table, int64(rows)),
		ticker.C, func() time.Duration { return time.Since(start) }, p.get)
	return func() { ticker.Stop(); clear() }, p.set
}

// partsDone counts the parts of a chunked read that are done, set by
// the goroutines reading and read by the one showing progress.
type partsDone struct {
	mu          sync.Mutex
	done, total int
}

func (p *partsDone) set(done, total int) {
	p.mu.Lock()
	p.done, p.total = done, total
	p.mu.Unlock()
}

func (p *partsDone) get() (done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done, p.total
}

// showProgress writes label and the elapsed time on one line of w at
// every tick, until stop, which waits for the last write and clears the
// line. With parts (not nil) reporting some done, it also writes how
// many of how many, and the time left were the rest as quick.
func showProgress(w io.Writer, label string, tick <-chan time.Time, elapsed func() time.Duration, parts func() (done, total int)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-tick:
				fmt.Fprintf(w, "\r\x1b[K%s: %s", label, progressStatus(elapsed(), parts))
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		fmt.Fprint(w, "\r\x1b[K")
	}
}

// progressStatus is the time so far, after the parts done when parts
// reports any, and then the time left at the pace so far: "3 of 16
// parts, 6s, about 26s left".
func progressStatus(elapsed time.Duration, parts func() (done, total int)) string {
	e := elapsed.Round(time.Second)
	if parts == nil {
		return e.String()
	}
	d, n := parts()
	if d == 0 || n == 0 {
		return e.String()
	}
	left := time.Duration(float64(elapsed) * float64(n-d) / float64(d)).Round(time.Second)
	return fmt.Sprintf("%d of %d parts, %s, about %s left", d, n, e, left)
}

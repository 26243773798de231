// Package callgrind counts the CPU instructions PostgreSQL spends on each
// ID an id default makes: bigserial's nextval(), sfgen's SQL generator and
// its native one, each in a single-user backend under valgrind's callgrind,
// whose counts are exact whatever else the machine runs.
//
// Each figure is a difference: a 100,000-row INSERT ... SELECT into a
// table whose id has the default, less the same INSERT with explicit ids,
// divided by the rows. A second figure is per statement: 20,000
// single-row INSERTs, prepared, in one transaction, with the clock frozen,
// less as many with explicit ids; besides the call itself it counts what
// every execution of a statement pays for its default's expression
// (setting up each function and operator in it), which a bulk INSERT pays
// once. A third is per autocommit INSERT: the same single-row INSERTs,
// each its own transaction, which adds what a default costs once per
// transaction (its relations' locks, the sequences' first access). The
// SQL and native generators are counted twice:
// with the clock frozen by libfaketime, so that no call falls behind the
// clock and every one takes the fast path (less libfaketime's own
// instructions per clock read, counted apart), and with the real clock,
// where catch-ups fall due far more often than outside valgrind (it runs
// the backend some 50 times slower); the catch-ups of that run, counted by
// pg_stat_xact_user_functions, give the cost of one.
package callgrind

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sfgen/sfgen/internal/pgcluster"
)

// ErrUnavailable is returned by Measure when valgrind or libfaketime is
// not installed.
var ErrUnavailable = errors.New("callgrind: valgrind or libfaketime is not installed")

// A Run is one measured statement's count.
type Run struct {
	Name         string `json:"name"`
	Instructions int64  `json:"instructions"` // the whole backend's, start to end
	CatchUps     int64  `json:"catch_ups"`    // calls of snowflake_next_state() in it
}

// A Table names a prepared table and what its id default is.
type Table struct {
	Name    string // the table, in the database's public schema
	Default string // its id default, for the report
	// FastPath counts it with the clock frozen too: sfgen's generators.
	FastPath bool
	// CatchUps counts its calls of snowflake_next_state(), the SQL
	// generator's catch-up (the native one catches up in C, uncounted).
	CatchUps bool
	// Plain is the table (id ..., c int) without a default that its
	// figure is over, and PlainID the id its baseline INSERT gives every
	// row; "" means Options.Plain and the row number g. (A uuid id's
	// baseline is a uuid table with one constant id.)
	Plain, PlainID string
}

// Options says what Measure counts.
type Options struct {
	Cluster *pgcluster.Cluster // a throwaway cluster, set up; Measure stops its server
	DB      string             // the database with the tables
	Rows    int                // rows per INSERT; 0 means 100,000
	// Statements is the number of single-row INSERTs per table; 0 means
	// 20,000, -1 none.
	Statements int
	// Plain is a table (id bigint, c int) with no default, the baseline;
	// Tables have (id ..., c int) with id's default to count.
	Plain  string
	Tables []Table
}

// A Figure is one default's instructions per row.
type Figure struct {
	Default string `json:"default"`
	// PerRow is with the real clock, catch-ups included.
	PerRow float64 `json:"per_row"`
	// FastPath is with the clock frozen (no catch-up), libfaketime's
	// instructions per clock read taken off; for sfgen's generators only.
	FastPath float64 `json:"fast_path,omitempty"`
	// CatchUps is how many catch-ups the real-clock run made, and
	// PerCatchUp what each cost over the fast path (Table.CatchUps only).
	CatchUps   int64   `json:"catch_ups,omitempty"`
	PerCatchUp float64 `json:"per_catch_up,omitempty"`
	// PerStatement is what the default adds to a single-row prepared
	// INSERT, the clock frozen; 0 when Options.Statements is -1.
	PerStatement float64 `json:"per_statement,omitempty"`
	// PerAutocommit is the same for such INSERTs each in a transaction
	// of its own.
	PerAutocommit float64 `json:"per_autocommit,omitempty"`
}

// A Report is what Measure found.
type Report struct {
	Rows          int      `json:"rows"`
	Statements    int      `json:"statements"`
	ClockOverhead float64  `json:"clock_overhead"` // libfaketime's instructions per clock read
	Figures       []Figure `json:"figures"`
	Runs          []Run    `json:"runs"`
}

// libfaketime is where Debian puts the preload library.
func libfaketime() string {
	matches, _ := filepath.Glob("/usr/lib/*/faketime/libfaketime.so.1")
	if len(matches) == 0 {
		return ""
	}
	return matches[0]
}

// Measure counts o's tables. It runs the backend once per table and clock,
// and twice more for the clock reads; at 100,000 rows each run takes some
// 10 to 60 seconds.
func Measure(ctx context.Context, o Options) (*Report, error) {
	faketime := libfaketime()
	if _, err := exec.LookPath("valgrind"); err != nil || faketime == "" {
		return nil, ErrUnavailable
	}
	if o.Rows == 0 {
		o.Rows = 100_000
	}
	if o.Statements == 0 {
		o.Statements = 20_000
	}
	r := &Report{Rows: o.Rows, Statements: max(o.Statements, 0)}
	// Frozen an hour back: every state sfgen made since is ahead of it, so
	// no call catches up.
	frozen := []string{"LD_PRELOAD=" + faketime, "FAKETIME=" + time.Now().UTC().Add(-time.Hour).Format("2006-01-02 15:04:05"), "TZ=UTC"}
	// count runs input, statements one a line: in one transaction, ending
	// with the count of catch-ups in it, or with autocommit each in its
	// own (no catch-ups counted: the clock is frozen for those).
	count := func(name, statement string, env []string, autocommit bool) (Run, error) {
		out := filepath.Join(o.Cluster.Dir(), "callgrind."+name)
		input := strings.Join([]string{"BEGIN", statement,
			"SELECT 'catchups=' || COALESCE(pg_catalog.sum(calls), 0) FROM pg_catalog.pg_stat_xact_user_functions WHERE funcname = 'snowflake_next_state'",
			"COMMIT", ""}, "\n")
		if autocommit {
			input = statement + "\n"
		}
		text, err := o.Cluster.Single(ctx, o.DB, input, []string{"-c", "track_functions=all"},
			[]string{"valgrind", "--tool=callgrind", "--callgrind-out-file=" + out}, env)
		if err != nil {
			return Run{}, err
		}
		res := Run{Name: name}
		if res.Instructions, err = totals(out); err != nil {
			return Run{}, err
		}
		if !autocommit {
			m := catchUpsRE.FindStringSubmatch(text)
			if m == nil {
				return Run{}, fmt.Errorf("callgrind: run %s: no catch-up count in the backend's output:\n%s", name, text)
			}
			res.CatchUps, _ = strconv.ParseInt(m[1], 10, 64)
		}
		r.Runs = append(r.Runs, res)
		return res, nil
	}
	run := func(name, statement string, env []string) (Run, error) { return count(name, statement, env, false) }
	autocommit := func(name, statement string) (Run, error) { return count(name, statement, frozen, true) }
	insert := func(table, id string) string {
		if id != "" {
			return fmt.Sprintf("INSERT INTO public.%s (id, c) SELECT %s, g FROM pg_catalog.generate_series(1, %d) g", table, id, o.Rows)
		}
		return fmt.Sprintf("INSERT INTO public.%s (c) SELECT g FROM pg_catalog.generate_series(1, %d) g", table, o.Rows)
	}
	// n single-row INSERTs into table, prepared, with id when it is not "".
	single := func(table, id string) string {
		lines := []string{fmt.Sprintf("PREPARE sfgen_single AS INSERT INTO public.%s (c) VALUES (1)", table)}
		if id == "g" {
			id = "1"
		}
		if id != "" {
			lines[0] = fmt.Sprintf("PREPARE sfgen_single AS INSERT INTO public.%s (id, c) VALUES (%s, 1)", table, id)
		}
		for range o.Statements {
			lines = append(lines, "EXECUTE sfgen_single")
		}
		return strings.Join(lines, "\n")
	}
	clockReads := fmt.Sprintf("SELECT pg_catalog.count(pg_catalog.clock_timestamp()) FROM pg_catalog.generate_series(1, %d)", o.Rows)
	realClock, err := run("clock-real", clockReads, nil)
	if err != nil {
		return nil, err
	}
	frozenClock, err := run("clock-frozen", clockReads, frozen)
	if err != nil {
		return nil, err
	}
	r.ClockOverhead = float64(frozenClock.Instructions-realClock.Instructions) / float64(o.Rows)
	// The baselines, each run once for the tables over it.
	type baseline struct{ real, frozen, single, autocommit Run }
	baselines := map[[2]string]baseline{}
	baselineOf := func(t Table) (baseline, error) {
		key := [2]string{cmp.Or(t.Plain, o.Plain), cmp.Or(t.PlainID, "g")}
		if b, ok := baselines[key]; ok {
			return b, nil
		}
		name := key[0]
		var b baseline
		var err error
		if b.real, err = run(name+"-real", insert(key[0], key[1]), nil); err != nil {
			return b, err
		}
		if b.frozen, err = run(name+"-frozen", insert(key[0], key[1]), frozen); err != nil {
			return b, err
		}
		if o.Statements > 0 {
			if b.single, err = run(name+"-single", single(key[0], key[1]), frozen); err != nil {
				return b, err
			}
			if b.autocommit, err = autocommit(name+"-autocommit", single(key[0], key[1])); err != nil {
				return b, err
			}
		}
		baselines[key] = b
		return b, nil
	}
	if _, err := baselineOf(Table{}); err != nil {
		return nil, err
	}
	for _, t := range o.Tables {
		b, err := baselineOf(t)
		if err != nil {
			return nil, err
		}
		base, baseFrozen, baseSingle := b.real, b.frozen, b.single
		real, err := run(t.Name+"-real", insert(t.Name, ""), nil)
		if err != nil {
			return nil, err
		}
		f := Figure{Default: t.Default, PerRow: float64(real.Instructions-base.Instructions) / float64(o.Rows)}
		if o.Statements > 0 {
			sr, err := run(t.Name+"-single", single(t.Name, ""), frozen)
			if err != nil {
				return nil, err
			}
			f.PerStatement = float64(sr.Instructions-baseSingle.Instructions) / float64(o.Statements)
			ar, err := autocommit(t.Name+"-autocommit", single(t.Name, ""))
			if err != nil {
				return nil, err
			}
			f.PerAutocommit = float64(ar.Instructions-b.autocommit.Instructions) / float64(o.Statements)
		}
		if t.FastPath {
			fr, err := run(t.Name+"-frozen", insert(t.Name, ""), frozen)
			if err != nil {
				return nil, err
			}
			if fr.CatchUps > 1 {
				return nil, fmt.Errorf("callgrind: %s with the clock frozen caught up %d times; want none", t.Default, fr.CatchUps)
			}
			// One clock read a row on the fast path (clock_timestamp() in
			// SQL, GetCurrentTimestamp() in C).
			f.FastPath = float64(fr.Instructions-baseFrozen.Instructions)/float64(o.Rows) - r.ClockOverhead
			if f.CatchUps = real.CatchUps; t.CatchUps && real.CatchUps > 0 {
				f.PerCatchUp = (float64(real.Instructions-base.Instructions) - f.FastPath*float64(o.Rows)) / float64(real.CatchUps)
			}
		}
		r.Figures = append(r.Figures, f)
	}
	return r, nil
}

var catchUpsRE = regexp.MustCompile(`catchups=(\d+)`)

// totals reads the total instruction count of a callgrind output file.
func totals(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("callgrind: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, key := range []string{"summary: ", "totals: "} {
			if v, ok := strings.CutPrefix(line, key); ok {
				return strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("callgrind: read %s: %w", path, err)
	}
	return 0, fmt.Errorf("callgrind: %s has no summary line", path)
}

// WriteText writes r as a table for people.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "instructions per row of a %d-row INSERT ... SELECT, over the same INSERT with explicit ids (callgrind, single-user backend)\n", r.Rows)
	fmt.Fprintf(w, "%-34s %10s %10s %10s %12s %14s %15s\n", "id default", "per row", "fast path", "catch-ups", "per catch-up", "per statement", "per autocommit")
	for _, f := range r.Figures {
		fast, catch, per := "", "", ""
		if f.FastPath != 0 {
			fast = strconv.FormatFloat(f.FastPath, 'f', 0, 64)
		}
		if f.PerCatchUp != 0 {
			catch = strconv.FormatInt(f.CatchUps, 10)
			per = strconv.FormatFloat(f.PerCatchUp, 'f', 0, 64)
		}
		statement, autocommit := "", ""
		if f.PerStatement != 0 {
			statement = strconv.FormatFloat(f.PerStatement, 'f', 0, 64)
			autocommit = strconv.FormatFloat(f.PerAutocommit, 'f', 0, 64)
		}
		fmt.Fprintf(w, "%-34s %10.0f %10s %10s %12s %14s %15s\n", f.Default, f.PerRow, fast, catch, per, statement, autocommit)
	}
	fmt.Fprintf(w, "(fast path: the clock frozen by libfaketime, its %.0f instructions per clock read taken off; per row: the real clock, whose catch-ups fall due far more often under valgrind; the native generator's catch-ups, in C, are not counted apart; per statement: %d single-row prepared INSERTs in one transaction, the clock frozen, over as many with explicit ids; per autocommit: the same, each its own transaction)\n", r.ClockOverhead, r.Statements)
}

package verify

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/idkit"
)

// A Time is one argument of snowflake_first_id and snowflake_last_id: a
// finite time, to the microsecond as a timestamptz holds it, or
// PostgreSQL's 'infinity' or '-infinity', which a time.Time cannot
// express.
type Time struct {
	Time     time.Time // when Infinity is 0; a sub-microsecond part is dropped on the way to PostgreSQL
	Infinity int8      // 1 for 'infinity', -1 for '-infinity', 0 for Time
}

// String returns t as a PostgreSQL literal, such as
// '2080-07-10 17:30:30.208001+00', '4714-11-24 00:00:00+00 BC' or
// 'infinity', so that a reported call can be pasted into psql.
func (t Time) String() string {
	switch {
	case t.Infinity > 0:
		return "'infinity'"
	case t.Infinity < 0:
		return "'-infinity'"
	}
	u := t.Time.UTC()
	y, era := u.Year(), ""
	if y <= 0 { // year 0 is 1 BC
		y, era = 1-y, " BC"
	}
	s := fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", y, u.Month(), u.Day(), u.Hour(), u.Minute(), u.Second())
	if us := u.Nanosecond() / 1000; us != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%06d", us), "0")
	}
	return "'" + s + "+00" + era + "'"
}

func (t Time) pg() pgtype.Timestamptz {
	switch {
	case t.Infinity > 0:
		return pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
	case t.Infinity < 0:
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	return pgtype.Timestamptz{Time: t.Time, Valid: true}
}

// The range of a finite timestamptz, in microseconds since
// 2000-01-01T00:00:00Z (how PostgreSQL stores it): 4714-11-24 00:00:00 BC
// to 294276-12-31 23:59:59.999999, both UTC.
const (
	pgMinMicros int64 = -211813488000000000
	pgMaxMicros int64 = 9223371331199999999
	y2kUnix     int64 = 946684800 // 2000-01-01T00:00:00Z in Unix seconds
)

// pgTime returns the time us microseconds after 2000-01-01T00:00:00Z.
func pgTime(us int64) time.Time {
	sec, frac := us/1e6, us%1e6
	if frac < 0 {
		sec, frac = sec-1, frac+1e6
	}
	return time.Unix(y2kUnix+sec, frac*1000).UTC()
}

// pgMicros is the inverse of pgTime, for times in the timestamptz range.
func pgMicros(t time.Time) int64 {
	return (t.Unix()-y2kUnix)*1e6 + int64(t.Nanosecond()/1000)
}

// A TimeVector is a fixed time every check runs snowflake_first_id and
// snowflake_last_id on.
type TimeVector struct {
	Name string `json:"name"`
	Time Time   `json:"time"`
}

// TimeVectors returns the fixed times for layout l: the worked example's
// millisecond and a microsecond either side; the epoch and the layout's
// last millisecond, each exact, a microsecond and a millisecond either
// side; the Unix epoch; the earliest and latest timestamptz; and
// ±infinity.
func TimeVectors(l snowflake.Layout) []TimeVector {
	e, m := l.MinTime(), l.MaxTime()
	worked := e.Add(time.Second)
	us, ms := time.Microsecond, time.Millisecond
	at := func(name string, t time.Time) TimeVector { return TimeVector{name, Time{Time: t}} }
	return []TimeVector{
		at("worked example", worked),
		at("worked example + 1µs", worked.Add(us)),
		at("worked example - 1µs", worked.Add(-us)),
		at("epoch", e),
		at("epoch + 1µs", e.Add(us)),
		at("epoch - 1µs", e.Add(-us)),
		at("epoch + 1ms", e.Add(ms)),
		at("epoch - 1ms", e.Add(-ms)),
		at("epoch - 1ms - 1µs", e.Add(-ms-us)),
		at("maximum - 1ms", m.Add(-ms)),
		at("maximum - 1ms + 1µs", m.Add(-ms+us)),
		at("maximum - 1µs", m.Add(-us)),
		at("maximum", m),
		at("maximum + 1µs", m.Add(us)),
		at("maximum + 1ms - 1µs", m.Add(ms-us)),
		at("maximum + 1ms", m.Add(ms)),
		at("Unix epoch", time.Unix(0, 0).UTC()),
		at("earliest timestamptz", pgTime(pgMinMicros)),
		at("latest timestamptz", pgTime(pgMaxMicros)),
		{"infinity", Time{Infinity: 1}},
		{"-infinity", Time{Infinity: -1}},
	}
}

// timeVectorTimes returns the times of TimeVectors(l).
func timeVectorTimes(l snowflake.Layout) []Time {
	vs := TimeVectors(l)
	ts := make([]Time, len(vs))
	for i, v := range vs {
		ts[i] = v.Time
	}
	return ts
}

// timesPerInput is how many random times Run draws per random compose
// input: one for every ten.
const timesPerInput = 10

// time draws a random time for the range functions, to the microsecond:
// 40% over the layout's whole range, 40% within a microsecond of a whole
// millisecond (half of them within two milliseconds of the epoch or the
// layout's last millisecond), 20% outside the layout (some at the ends of
// the timestamptz range).
func (g *generator) time(r *rand.Rand) Time {
	lo, hi := pgMicros(g.l.MinTime()), pgMicros(g.l.MaxTime())
	switch n := r.IntN(100); {
	case n < 40:
		return Time{Time: pgTime(lo + r.Int64N(hi-lo+1))}
	case n < 80:
		var ms int64
		if r.IntN(2) == 0 {
			ms = g.lo[0] + r.Int64N(g.hi[0]-g.lo[0]+1)
		} else {
			ms = g.edge(r, 0) + r.Int64N(5) - 2 // 2 ms past the limit to 5 ms inside
		}
		off := [...]int64{-1, 0, 1, r.Int64N(1999) - 999}[r.IntN(4)]
		return Time{Time: time.UnixMilli(ms).Add(time.Duration(off) * time.Microsecond).UTC()}
	case n < 90:
		if r.IntN(8) == 0 {
			return Time{Time: pgTime(pgMinMicros + r.Int64N(4))}
		}
		return Time{Time: pgTime(pgMinMicros + r.Int64N(lo-pgMinMicros))}
	default:
		if r.IntN(8) == 0 {
			return Time{Time: pgTime(pgMaxMicros - r.Int64N(4))}
		}
		return Time{Time: pgTime(hi + 1 + r.Int64N(pgMaxMicros-hi))}
	}
}

// A rangeAnswer is one side's answer to snowflake_first_id or
// snowflake_last_id: an ID, or a message raised with SQLSTATE 22003.
type rangeAnswer struct {
	id  int64
	err string // "" for an ID
}

func (a rangeAnswer) String() string {
	if a.err != "" {
		return "error " + outOfRange + ": " + a.err
	}
	return strconv.FormatInt(a.id, 10)
}

// goRange returns Go's answers for snowflake_first_id(t) and
// snowflake_last_id(t): Layout.FirstID and Layout.LastID; for ±infinity,
// which they cannot take, the SQL functions' documented error.
func goRange(l snowflake.Layout, t Time) (first, last rangeAnswer) {
	if t.Infinity != 0 {
		v := "infinity"
		if t.Infinity < 0 {
			v = "-infinity"
		}
		msg := idkit.RangeMessage(snowflake.FieldTimestamp, v, l.Min(snowflake.FieldTimestamp), l.Max(snowflake.FieldTimestamp))
		return rangeAnswer{err: msg}, rangeAnswer{err: msg}
	}
	answer := func(id snowflake.ID, err error) rangeAnswer {
		if err != nil {
			return rangeAnswer{err: err.Error()}
		}
		return rangeAnswer{id: int64(id)}
	}
	return answer(l.FirstID(t.Time)), answer(l.LastID(t.Time))
}

// A rangeCall is one call of snowflake_first_id or snowflake_last_id,
// with Go's answer.
type rangeCall struct {
	t    Time
	last bool // snowflake_last_id, else snowflake_first_id
	want rangeAnswer
}

func (c rangeCall) String() string {
	fn := "snowflake_first_id"
	if c.last {
		fn = "snowflake_last_id"
	}
	return fn + "(" + c.t.String() + ")"
}

// checkTimes checks snowflake_first_id and snowflake_last_id on times
// against Go's answers: the same ID, or SQLSTATE 22003 and the same
// message. The calls Go answers with an ID go in one statement (checked
// again one by one if the database raises); the others through
// pg_temp.sfgen_try_range, which catches each error. A caught call costs
// a subtransaction, so only the calls expected to fail pay for one.
func (c *checker) checkTimes(ctx context.Context, conn *pgxpool.Conn, times []Time, report reportFunc) error {
	var plain, caught []rangeCall
	for _, t := range times {
		first, last := goRange(c.o.Layout, t)
		for _, call := range []rangeCall{{t, false, first}, {t, true, last}} {
			if call.want.err == "" {
				plain = append(plain, call)
			} else {
				caught = append(caught, call)
			}
		}
	}
	if len(plain) > 0 {
		err := c.checkRangePlain(ctx, conn, plain, report)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			caught = append(caught, plain...)
		} else if err != nil {
			return err
		}
	}
	return c.checkRangeCaught(ctx, conn, caught, report)
}

// rangeColumns returns the arguments of calls as arrays.
func rangeColumns(calls []rangeCall) (ts []pgtype.Timestamptz, last []bool) {
	ts, last = make([]pgtype.Timestamptz, len(calls)), make([]bool, len(calls))
	for i, c := range calls {
		ts[i], last[i] = c.t.pg(), c.last
	}
	return ts, last
}

// compare reports where the database's answer to the call differs from
// Go's.
func (c rangeCall) compare(id pgtype.Int8, state, msg pgtype.Text, report reportFunc) {
	if c.want.err == "" {
		if state.Valid || !id.Valid || id.Int64 != c.want.id {
			report(c.String(), c.want.String(), dbAnswer(id, state, msg))
		}
		return
	}
	if id.Valid || state.String != outOfRange || msg.String != c.want.err {
		report(c.String(), c.want.String(), dbAnswer(id, state, msg))
	}
}

func (c *checker) checkRangePlain(ctx context.Context, conn *pgxpool.Conn, calls []rangeCall, report reportFunc) error {
	ts, last := rangeColumns(calls)
	rows, _ := conn.Query(ctx, `
SELECT s.id
FROM (
    SELECT u.i, CASE WHEN u.last THEN `+c.schema+`.snowflake_last_id(u.t) ELSE `+c.schema+`.snowflake_first_id(u.t) END AS id
    FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.timestamptz[]), pg_catalog.unnest($2::boolean[])) WITH ORDINALITY AS u(t, last, i)
    OFFSET 0
) AS s
ORDER BY s.i`, ts, last)
	// Collect first: a report made row by row would be made again if a
	// later row raises and the calls are checked again one by one.
	var got []pgtype.Int8
	var id pgtype.Int8
	_, err := pgx.ForEachRow(rows, []any{&id}, func() error {
		got = append(got, id)
		return nil
	})
	if err != nil {
		return err
	}
	if len(got) != len(calls) {
		return fmt.Errorf("database returned %d rows for %d calls", len(got), len(calls))
	}
	var none pgtype.Text
	for i, call := range calls {
		call.compare(got[i], none, none, report)
	}
	return nil
}

func (c *checker) checkRangeCaught(ctx context.Context, conn *pgxpool.Conn, calls []rangeCall, report reportFunc) error {
	if len(calls) == 0 {
		return nil
	}
	if err := c.prepare(ctx, conn); err != nil {
		return err
	}
	ts, last := rangeColumns(calls)
	rows, _ := conn.Query(ctx, `
SELECT r.id, r.state, r.message
FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.timestamptz[]), pg_catalog.unnest($2::boolean[])) WITH ORDINALITY AS u(t, last, i)
CROSS JOIN LATERAL pg_temp.sfgen_try_range(u.t, u.last) AS r
ORDER BY u.i`, ts, last)
	i := 0
	var id pgtype.Int8
	var state, msg pgtype.Text
	_, err := pgx.ForEachRow(rows, []any{&id, &state, &msg}, func() error {
		if i >= len(calls) {
			return fmt.Errorf("database returned more rows than the %d calls", len(calls))
		}
		calls[i].compare(id, state, msg, report)
		i++
		return nil
	})
	if err == nil && i != len(calls) {
		err = fmt.Errorf("database returned %d rows for %d calls", i, len(calls))
	}
	return err
}

package verify

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
)

// outOfRange is SQLSTATE numeric_value_out_of_range, which the generated
// functions raise for every input the Go composer rejects.
const outOfRange = "22003"

// helpers are session-temporary functions that call the installed ones
// and catch what they raise, so that one statement can check many inputs
// that are each expected to fail. %[1]s is the quoted schema. On a Citus
// node they are made with Citus' DDL propagation off for the session:
// a worker refuses DDL that would propagate, temporary functions
// included, and no node but this one needs them.
const helpers = `
CREATE OR REPLACE FUNCTION pg_temp.sfgen_try_compose(ts bigint, dc integer, m integer, seq integer,
    OUT id bigint, OUT state pg_catalog.text, OUT message pg_catalog.text)
LANGUAGE plpgsql AS $fn$
BEGIN
    id := %[1]s.snowflake_compose(ts, dc, m, seq);
EXCEPTION WHEN OTHERS THEN
    state := SQLSTATE;
    message := SQLERRM;
END
$fn$;

CREATE OR REPLACE FUNCTION pg_temp.sfgen_try_id(id bigint,
    OUT timestamp_ms bigint, OUT datacenter_id integer, OUT machine_id integer, OUT sequence_id integer,
    OUT decompose_state pg_catalog.text, OUT decompose_message pg_catalog.text,
    OUT ts pg_catalog.timestamptz, OUT timestamp_state pg_catalog.text, OUT timestamp_message pg_catalog.text)
LANGUAGE plpgsql AS $fn$
BEGIN
    BEGIN
        SELECT d.timestamp_ms, d.datacenter_id, d.machine_id, d.sequence_id
        INTO timestamp_ms, datacenter_id, machine_id, sequence_id
        FROM %[1]s.snowflake_decompose(id) AS d;
    EXCEPTION WHEN OTHERS THEN
        decompose_state := SQLSTATE;
        decompose_message := SQLERRM;
    END;
    BEGIN
        ts := %[1]s.snowflake_timestamp(id);
    EXCEPTION WHEN OTHERS THEN
        timestamp_state := SQLSTATE;
        timestamp_message := SQLERRM;
    END;
END
$fn$;

CREATE OR REPLACE FUNCTION pg_temp.sfgen_try_range(t pg_catalog.timestamptz, last boolean,
    OUT id bigint, OUT state pg_catalog.text, OUT message pg_catalog.text)
LANGUAGE plpgsql AS $fn$
BEGIN
    IF last THEN
        id := %[1]s.snowflake_last_id(t);
    ELSE
        id := %[1]s.snowflake_first_id(t);
    END IF;
EXCEPTION WHEN OTHERS THEN
    state := SQLSTATE;
    message := SQLERRM;
END
$fn$;
`

// prepare creates the helpers on conn's session, once per session.
func (c *checker) prepare(ctx context.Context, conn *pgxpool.Conn) error {
	c.mu.Lock()
	done := c.prepared[conn.Conn().PgConn()]
	c.mu.Unlock()
	if done {
		return nil
	}
	if _, err := conn.Exec(ctx, catalog.CitusLocalDDL(false)+";\n"+fmt.Sprintf(helpers+stringHelpers, c.schema)); err != nil {
		return fmt.Errorf("create temporary helper functions: %w", err)
	}
	c.mu.Lock()
	c.prepared[conn.Conn().PgConn()] = true
	c.mu.Unlock()
	return nil
}

type reportFunc func(check, goSide, dbSide string)

// checkValid checks inputs Go composed into ids: the database must compose
// the same IDs, and decompose and date Go's IDs as Go does. It sends them
// in one statement; if the database rejects any of them, it checks them
// again one by one (still in one statement) to find which.
func (c *checker) checkValid(ctx context.Context, conn *pgxpool.Conn, inputs []Input, ids []int64, report reportFunc) error {
	if len(inputs) == 0 {
		return nil
	}
	ts, dc, m, seq := columns(inputs)
	// The decomposition is taken from a subquery kept apart by OFFSET 0, so
	// that snowflake_decompose runs once per row; a LATERAL call costs
	// more per row than the function itself.
	rows, _ := conn.Query(ctx, `
SELECT s.id, (s.d).timestamp_ms, (s.d).datacenter_id, (s.d).machine_id, (s.d).sequence_id, s.t
FROM (
    SELECT u.i,
           `+c.schema+`.snowflake_compose(u.ts, u.dc, u.m, u.seq) AS id,
           `+c.schema+`.snowflake_decompose(u.id) AS d,
           `+c.schema+`.snowflake_timestamp(u.id) AS t
    FROM ROWS FROM (pg_catalog.unnest($1::bigint[]), pg_catalog.unnest($2::integer[]), pg_catalog.unnest($3::integer[]), pg_catalog.unnest($4::integer[]), pg_catalog.unnest($5::bigint[])) WITH ORDINALITY AS u(ts, dc, m, seq, id, i)
    OFFSET 0
) AS s
ORDER BY s.i`, ts, dc, m, seq, ids)
	i := 0
	var got, dts int64
	var ddc, dm, dseq int32
	var t time.Time
	_, err := pgx.ForEachRow(rows, []any{&got, &dts, &ddc, &dm, &dseq, &t}, func() error {
		in, id := inputs[i], ids[i]
		i++
		if got != id {
			report(composeCall(in), strconv.FormatInt(id, 10), strconv.FormatInt(got, 10))
		}
		c.compareDecoded(id, dts, ddc, dm, dseq, t, report)
		return nil
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return c.checkValidOneByOne(ctx, conn, inputs, ids, report)
	}
	if err == nil && i != len(inputs) {
		err = fmt.Errorf("database returned %d rows for %d inputs", i, len(inputs))
	}
	return err
}

// checkValidOneByOne is checkValid with every call caught on its own.
func (c *checker) checkValidOneByOne(ctx context.Context, conn *pgxpool.Conn, inputs []Input, ids []int64, report reportFunc) error {
	if err := c.prepare(ctx, conn); err != nil {
		return err
	}
	ts, dc, m, seq := columns(inputs)
	rows, _ := conn.Query(ctx, `
SELECT c.id, c.state, c.message, t.*
FROM ROWS FROM (pg_catalog.unnest($1::bigint[]), pg_catalog.unnest($2::integer[]), pg_catalog.unnest($3::integer[]), pg_catalog.unnest($4::integer[]), pg_catalog.unnest($5::bigint[])) WITH ORDINALITY AS u(ts, dc, m, seq, id, i)
CROSS JOIN LATERAL pg_temp.sfgen_try_compose(u.ts, u.dc, u.m, u.seq) AS c
CROSS JOIN LATERAL pg_temp.sfgen_try_id(u.id) AS t
ORDER BY u.i`, ts, dc, m, seq, ids)
	i := 0
	var got pgtype.Int8
	var state, msg pgtype.Text
	var d idResult
	_, err := pgx.ForEachRow(rows, append([]any{&got, &state, &msg}, d.targets()...), func() error {
		in, id := inputs[i], ids[i]
		i++
		if !got.Valid || got.Int64 != id {
			report(composeCall(in), strconv.FormatInt(id, 10), dbAnswer(got, state, msg))
		}
		d.compare(c, id, report)
		return nil
	})
	return err
}

// checkRejected checks inputs Go rejected with errs: the database must
// reject each with SQLSTATE 22003 and the same message.
func (c *checker) checkRejected(ctx context.Context, conn *pgxpool.Conn, inputs []Input, errs []error, report reportFunc) error {
	if len(inputs) == 0 {
		return nil
	}
	if err := c.prepare(ctx, conn); err != nil {
		return err
	}
	ts, dc, m, seq := columns(inputs)
	rows, _ := conn.Query(ctx, `
SELECT c.id, c.state, c.message
FROM ROWS FROM (pg_catalog.unnest($1::bigint[]), pg_catalog.unnest($2::integer[]), pg_catalog.unnest($3::integer[]), pg_catalog.unnest($4::integer[])) WITH ORDINALITY AS u(ts, dc, m, seq, i)
CROSS JOIN LATERAL pg_temp.sfgen_try_compose(u.ts, u.dc, u.m, u.seq) AS c
ORDER BY u.i`, ts, dc, m, seq)
	i := 0
	var got pgtype.Int8
	var state, msg pgtype.Text
	_, err := pgx.ForEachRow(rows, []any{&got, &state, &msg}, func() error {
		in, goErr := inputs[i], errs[i]
		i++
		if got.Valid || state.String != outOfRange || msg.String != goErr.Error() {
			report(composeCall(in), goAnswer(goErr), dbAnswer(got, state, msg))
		}
		return nil
	})
	return err
}

// checkNegative checks negative IDs: decompose and timestamp must reject
// each as Go does.
func (c *checker) checkNegative(ctx context.Context, conn *pgxpool.Conn, ids []int64, report reportFunc) error {
	if len(ids) == 0 {
		return nil
	}
	if err := c.prepare(ctx, conn); err != nil {
		return err
	}
	rows, _ := conn.Query(ctx, `
SELECT t.*
FROM ROWS FROM (pg_catalog.unnest($1::bigint[])) WITH ORDINALITY AS u(id, i)
CROSS JOIN LATERAL pg_temp.sfgen_try_id(u.id) AS t
ORDER BY u.i`, ids)
	i := 0
	var d idResult
	_, err := pgx.ForEachRow(rows, d.targets(), func() error {
		id := ids[i]
		i++
		d.compare(c, id, report)
		return nil
	})
	return err
}

// idResult is a row of pg_temp.sfgen_try_id.
type idResult struct {
	ts                        pgtype.Int8
	dc, m, seq                pgtype.Int4
	decomposeState, decompMsg pgtype.Text
	t                         pgtype.Timestamptz
	timestampState, tsMsg     pgtype.Text
}

func (d *idResult) targets() []any {
	return []any{&d.ts, &d.dc, &d.m, &d.seq, &d.decomposeState, &d.decompMsg, &d.t, &d.timestampState, &d.tsMsg}
}

// compare checks one row of sfgen_try_id against Go's answers for id.
func (d *idResult) compare(c *checker, id int64, report reportFunc) {
	p, goErr := c.o.Layout.Decompose(snowflake.ID(id))
	if goErr == nil {
		if d.decomposeState.Valid {
			report(fmt.Sprintf("snowflake_decompose(%d)", id), partsAnswer(p), "error "+d.decomposeState.String+": "+d.decompMsg.String)
		} else {
			c.compareDecoded(id, d.ts.Int64, d.dc.Int32, d.m.Int32, d.seq.Int32, time.Time{}, report)
		}
		if d.timestampState.Valid {
			report(fmt.Sprintf("snowflake_timestamp(%d)", id), p.Time().Format(timeFormat), "error "+d.timestampState.String+": "+d.tsMsg.String)
		} else if !d.t.Time.Equal(p.Time()) {
			report(fmt.Sprintf("snowflake_timestamp(%d)", id), p.Time().Format(timeFormat), d.t.Time.UTC().Format(timeFormat))
		}
		return
	}
	if d.decomposeState.String != outOfRange || d.decompMsg.String != goErr.Error() {
		report(fmt.Sprintf("snowflake_decompose(%d)", id), goAnswer(goErr), rowAnswer(d.decomposeState, d.decompMsg, partsAnswer(snowflake.Parts{Timestamp: d.ts.Int64, Datacenter: int64(d.dc.Int32), Machine: int64(d.m.Int32), Sequence: int64(d.seq.Int32)})))
	}
	if d.timestampState.String != outOfRange || d.tsMsg.String != goErr.Error() {
		report(fmt.Sprintf("snowflake_timestamp(%d)", id), goAnswer(goErr), rowAnswer(d.timestampState, d.tsMsg, d.t.Time.UTC().Format(timeFormat)))
	}
}

// compareDecoded checks the database's decomposition and time of a valid
// id against Go's. A zero t skips the time.
func (c *checker) compareDecoded(id, ts int64, dc, m, seq int32, t time.Time, report reportFunc) {
	p, _ := c.o.Layout.Decompose(snowflake.ID(id))
	got := snowflake.Parts{Timestamp: ts, Datacenter: int64(dc), Machine: int64(m), Sequence: int64(seq)}
	if got != p {
		report(fmt.Sprintf("snowflake_decompose(%d)", id), partsAnswer(p), partsAnswer(got))
	}
	if !t.IsZero() && !t.Equal(p.Time()) {
		report(fmt.Sprintf("snowflake_timestamp(%d)", id), p.Time().Format(timeFormat), t.UTC().Format(timeFormat))
	}
}

const timeFormat = "2006-01-02T15:04:05.000000Z07:00"

func columns(inputs []Input) (ts []int64, dc, m, seq []int32) {
	ts = make([]int64, len(inputs))
	dc = make([]int32, len(inputs))
	m = make([]int32, len(inputs))
	seq = make([]int32, len(inputs))
	for i, in := range inputs {
		ts[i], dc[i], m[i], seq[i] = in.Timestamp, in.Datacenter, in.Machine, in.Sequence
	}
	return ts, dc, m, seq
}

func composeCall(in Input) string {
	return fmt.Sprintf("snowflake_compose(%d, %d, %d, %d)", in.Timestamp, in.Datacenter, in.Machine, in.Sequence)
}

func partsAnswer(p snowflake.Parts) string {
	return fmt.Sprintf("(timestamp_ms %d, datacenter %d, machine %d, sequence %d)", p.Timestamp, p.Datacenter, p.Machine, p.Sequence)
}

func goAnswer(err error) string { return "error " + outOfRange + ": " + err.Error() }

func dbAnswer(id pgtype.Int8, state, msg pgtype.Text) string {
	return rowAnswer(state, msg, strconv.FormatInt(id.Int64, 10))
}

func rowAnswer(state, msg pgtype.Text, value string) string {
	if state.Valid {
		return "error " + state.String + ": " + msg.String
	}
	return value
}

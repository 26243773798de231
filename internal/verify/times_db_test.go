package verify

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	snowflake "github.com/sfgen/sfgen"
)

// TestRangeFunctionsInDatabase calls snowflake_first_id and
// snowflake_last_id on every fixed time directly, independently of Run,
// once with the time as a parameter and once as the literal a mismatch
// report shows, and expects the hand-written answers of wantTimeAnswers
// (which TestTimeVectorsAnswers also holds the Go twins to): the ID, or
// SQLSTATE 22003 and the exact message, ±infinity included.
func TestRangeFunctionsInDatabase(t *testing.T) {
	pool, schema := database(t)
	installInto(t, pool, schema)
	ctx := context.Background()
	want := wantTimeAnswers()
	answer := func(err error, id int64) string {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return "error " + pgErr.Code + ": " + pgErr.Message
		}
		if err != nil {
			t.Fatal(err)
		}
		return strconv.FormatInt(id, 10)
	}
	for _, v := range TimeVectors(snowflake.Twitter()) {
		for i, fn := range []string{"snowflake_first_id", "snowflake_last_id"} {
			var id int64
			err := pool.QueryRow(ctx, "SELECT "+schema+"."+fn+"($1)", v.Time.pg()).Scan(&id)
			if got := answer(err, id); got != want[v.Name][i] {
				t.Errorf("%s: %s(%s) = %s, want %s", v.Name, fn, v.Time, got, want[v.Name][i])
			}
			err = pool.QueryRow(ctx, "SELECT "+schema+"."+fn+"("+v.Time.String()+")").Scan(&id)
			if got := answer(err, id); got != want[v.Name][i] {
				t.Errorf("%s: %s(%s) as a literal = %s, want %s", v.Name, fn, v.Time, got, want[v.Name][i])
			}
		}
	}
	// Microseconds past 264,000 AD, where extract('epoch') drops them
	// (releases 1 to 5 named the millisecond before in the error).
	const rng = " out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"
	for _, c := range []struct {
		t    Time
		want [2]string
	}{
		{Time{Time: pgTime(pgMaxMicros - 988)}, [2]string{"error 22003: timestamp 9224318016000000" + rng, "9223372036854775807"}},
		{Time{Time: time.Date(294267, 2, 21, 21, 37, 45, 4011000, time.UTC)}, [2]string{"error 22003: timestamp 9224006881065005" + rng, "9223372036854775807"}},
	} {
		for i, fn := range []string{"snowflake_first_id", "snowflake_last_id"} {
			var id int64
			err := pool.QueryRow(ctx, "SELECT "+schema+"."+fn+"($1)", c.t.pg()).Scan(&id)
			if got := answer(err, id); got != c.want[i] {
				t.Errorf("%s(%s) = %s, want %s", fn, c.t, got, c.want[i])
			}
		}
	}
}

// TestRangeFunctionsKeepTheirPromise checks the SQL functions against
// what their comments promise, in SQL alone, with no Go answer to agree
// with: for every time t inside the layout, snowflake_first_id(t) is
// dated at or after t and the ID before it before t, and
// snowflake_last_id(t) at or before t and the ID after it after t.
func TestRangeFunctionsKeepTheirPromise(t *testing.T) {
	pool, schema := database(t)
	installInto(t, pool, schema)
	g := newGenerator(snowflake.Twitter())
	r := rand.New(rand.NewPCG(seed(t), 7))
	var times []pgtype.Timestamptz
	for _, v := range TimeVectors(snowflake.Twitter()) {
		times = append(times, v.Time.pg())
	}
	for range 20000 {
		times = append(times, g.time(r).pg())
	}
	rows, err := pool.Query(context.Background(), `
SELECT u.t::pg_catalog.text, s.f, s.l
FROM pg_catalog.unnest($1::pg_catalog.timestamptz[]) AS u(t)
CROSS JOIN LATERAL (SELECT `+schema+`.snowflake_first_id(u.t) AS f, `+schema+`.snowflake_last_id(u.t) AS l) AS s
WHERE pg_catalog.isfinite(u.t) AND u.t >= $2 AND u.t <= $3
  AND NOT (`+schema+`.snowflake_timestamp(s.f) >= u.t
       AND CASE WHEN s.f = 0 THEN true ELSE `+schema+`.snowflake_timestamp(s.f - 1) < u.t END
       AND `+schema+`.snowflake_timestamp(s.l) <= u.t
       AND CASE WHEN s.l = 9223372036854775807 THEN true ELSE `+schema+`.snowflake_timestamp(s.l + 1) > u.t END)`,
		times, snowflake.Twitter().MinTime(), snowflake.Twitter().MaxTime())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var ts string
		var f, l int64
		if err := rows.Scan(&ts, &f, &l); err != nil {
			t.Fatal(err)
		}
		if n++; n <= 10 {
			t.Errorf("at %s: snowflake_first_id = %d, snowflake_last_id = %d, which do not bound the IDs of that time", ts, f, l)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		t.Errorf("%d of %d times broke the promise", n, len(times))
	}
}

package verify

import (
	"math/rand/v2"
	"testing"
	"time"

	snowflake "github.com/sfgen/sfgen"
)

func TestTimeString(t *testing.T) {
	for _, tc := range []struct {
		t    Time
		want string
	}{
		{Time{Time: time.UnixMilli(3487858230208).Add(time.Microsecond)}, "'2080-07-10 17:30:30.208001+00'"},
		{Time{Time: time.UnixMilli(1288834974657)}, "'2010-11-04 01:42:54.657+00'"},
		{Time{Time: time.Date(2023, 11, 15, 3, 43, 30, 0, time.FixedZone("IST", 5*3600+1800))}, "'2023-11-14 22:13:30+00'"},
		{Time{Time: time.Date(2023, 11, 14, 22, 13, 30, 999, time.UTC)}, "'2023-11-14 22:13:30+00'"}, // below a microsecond: dropped
		{Time{Time: pgTime(pgMinMicros)}, "'4714-11-24 00:00:00+00 BC'"},
		{Time{Time: time.Date(0, 12, 31, 23, 59, 59, 500000000, time.UTC)}, "'0001-12-31 23:59:59.5+00 BC'"},
		{Time{Time: pgTime(pgMaxMicros)}, "'294276-12-31 23:59:59.999999+00'"},
		{Time{Infinity: 1}, "'infinity'"},
		{Time{Infinity: -1}, "'-infinity'"},
	} {
		if got := tc.t.String(); got != tc.want {
			t.Errorf("String(%v) = %s, want %s", tc.t.Time, got, tc.want)
		}
	}
}

func TestPGTime(t *testing.T) {
	if got, want := pgTime(pgMinMicros), time.Date(-4713, 11, 24, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("pgTime(min) = %v, want %v (4714-11-24 BC)", got, want)
	}
	if got, want := pgTime(pgMaxMicros), time.Date(294276, 12, 31, 23, 59, 59, 999999000, time.UTC); !got.Equal(want) {
		t.Errorf("pgTime(max) = %v, want %v", got, want)
	}
	if got := pgTime(0); !got.Equal(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("pgTime(0) = %v", got)
	}
	for _, us := range []int64{pgMinMicros, pgMinMicros + 1, -1_000_001, -1, 0, 1, 999_999, pgMaxMicros - 1, pgMaxMicros} {
		if got := pgMicros(pgTime(us)); got != us {
			t.Errorf("pgMicros(pgTime(%d)) = %d", us, got)
		}
	}
}

// TestTimeVectorsAnswers pins Go's answers on the fixed times of the
// Twitter layout, by hand: the SQL functions must give these.
func TestTimeVectorsAnswers(t *testing.T) {
	got := map[string][2]string{}
	for _, v := range TimeVectors(snowflake.Twitter()) {
		f, l := goRange(snowflake.Twitter(), v.Time)
		got[v.Name] = [2]string{f.String(), l.String()}
	}
	for name, want := range wantTimeAnswers() {
		if got[name] != want {
			t.Errorf("%s: Go answers %q, want %q", name, got[name], want)
		}
		delete(got, name)
	}
	for name := range got {
		t.Errorf("time vector %q has no expected answer here", name)
	}
}

// wantTimeAnswers are the answers of snowflake_first_id and
// snowflake_last_id on TimeVectors(Twitter), from the README formula
// ((ms − 1288834974657) << 22, with | 4194303 for the last ID) at the
// millisecond written out: first rounds up, last down.
func wantTimeAnswers() map[string][2]string {
	const rng = " out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"
	e := func(v string) string { return "error 22003: timestamp " + v + rng }
	return map[string][2]string{
		"worked example":       {"4194304000", "4198498303"}, // 1000 ms after the epoch
		"worked example + 1µs": {"4198498304", "4198498303"}, // 1001, 1000
		"worked example - 1µs": {"4194304000", "4194303999"}, // 1000, 999
		"epoch":                {"0", "4194303"},
		"epoch + 1µs":          {"4194304", "4194303"},
		"epoch - 1µs":          {"0", e("1288834974656")},
		"epoch + 1ms":          {"4194304", "8388607"},
		"epoch - 1ms":          {"0", e("1288834974656")},
		"epoch - 1ms - 1µs":    {"0", e("1288834974655")},
		"maximum - 1ms":        {"9223372036846387200", "9223372036850581503"},
		"maximum - 1ms + 1µs":  {"9223372036850581504", "9223372036850581503"},
		"maximum - 1µs":        {"9223372036850581504", "9223372036850581503"},
		"maximum":              {"9223372036850581504", "9223372036854775807"},
		"maximum + 1µs":        {e("3487858230209"), "9223372036854775807"},
		"maximum + 1ms - 1µs":  {e("3487858230209"), "9223372036854775807"},
		"maximum + 1ms":        {e("3487858230209"), "9223372036854775807"},
		"Unix epoch":           {"0", e("0")},
		"earliest timestamptz": {"0", e("-210866803200000")},
		"latest timestamptz":   {e("9224318016000000"), "9223372036854775807"},
		"infinity":             {e("infinity"), e("infinity")},
		"-infinity":            {e("-infinity"), e("-infinity")},
	}
}

// TestRandomTimes checks that the random times stay in the timestamptz
// range, are whole microseconds, and reach every region Run means them
// to: before the epoch, inside, after the last millisecond, on a whole
// millisecond, and a microsecond either side of one.
func TestRandomTimes(t *testing.T) {
	g := newGenerator(snowflake.Twitter())
	r := rand.New(rand.NewPCG(1, 2))
	var before, inside, after, exact, nearMS, pgEnds int
	for range 20000 {
		tm := g.time(r)
		if tm.Infinity != 0 {
			t.Fatalf("random time %v is infinite", tm)
		}
		us := pgMicros(tm.Time)
		if us < pgMinMicros || us > pgMaxMicros || tm.Time.Nanosecond()%1000 != 0 {
			t.Fatalf("random time %s outside timestamptz or not whole microseconds", tm)
		}
		switch {
		case tm.Time.Before(snowflake.Twitter().MinTime()):
			before++
		case tm.Time.After(snowflake.Twitter().MaxTime()):
			after++
		default:
			inside++
		}
		switch tm.Time.Nanosecond() % 1_000_000 {
		case 0:
			exact++
		case 1000, 999000:
			nearMS++
		}
		if us < pgMinMicros+4 || us > pgMaxMicros-4 {
			pgEnds++
		}
	}
	t.Logf("before %d, inside %d, after %d, exact ms %d, 1µs from one %d, at the ends of timestamptz %d", before, inside, after, exact, nearMS, pgEnds)
	if before < 1000 || after < 1000 || inside < 10000 || exact < 1000 || nearMS < 1000 || pgEnds < 100 {
		t.Errorf("random times miss a region")
	}
}

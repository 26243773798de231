package bench

import (
	"strings"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{nil, 0.5, 0},
		{[]float64{3}, 0.9, 3},
		{[]float64{4, 1, 3, 2}, 0, 1},
		{[]float64{4, 1, 3, 2}, 1, 4},
		{[]float64{4, 1, 3, 2}, 0.5, 2.5},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0.1, 2},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0.9, 10},
	} {
		if got := quantile(tc.xs, tc.q); got != tc.want {
			t.Errorf("quantile(%v, %v) = %v, want %v", tc.xs, tc.q, got, tc.want)
		}
	}
	xs := []float64{2, 1}
	quantile(xs, 0.5)
	if xs[0] != 2 {
		t.Errorf("quantile sorted its argument: %v", xs)
	}
}

func TestWriteText(t *testing.T) {
	r := &Result{
		Clients: 8, Rounds: 3, RoundSeconds: 1, Profile: "realistic", SynchronousCommit: "on", ServerVersion: "15.18",
		Bigserial:   Variant{Name: "bigserial", Rows: 300, TPS: 100, RoundTPS: []float64{90, 100, 110}, WALPerRow: 190, SeqWALPerID: 3, PKeyBytesPerRow: 22.55},
		Snowflake:   Variant{Name: "snowflake_next_id", Rows: 285, TPS: 95, RoundTPS: []float64{99, 95, 91}, WALPerRow: 192, SeqWALPerID: -1},
		Ratio:       0.95,
		RoundRatios: []float64{1.1, 0.95, 0.827},
		Statement: &Statement{Rows: 100000, Runs: 3, BigserialUs: []float64{1.5, 1.6, 1.7}, SnowflakeUs: []float64{1.7, 1.9, 1.8},
			BigserialMedianUs: 1.6, SnowflakeMedianUs: 1.8, ExtraMedianUs: 0.2, Checkpointed: true,
			Bytes: []StatementBytes{{Name: "bigserial", PKeyBytesPerRow: 22.46, WALPerRow: 190.04}, {Name: "snowflake_next_id", PKeyBytesPerRow: 22.5, WALPerRow: 191}}},
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"8 clients, 3 rounds of 1.0s per variant (alternating), realistic profile, synchronous_commit=on,",
		"      22.6 B  90/100/110",
		"90/100/110",
		"91/95/99",
		"3.0 B", "n/a",
		"ratio snowflake_next_id/bigserial: 0.950 (round by round: median 0.950, 10th-90th percentile 0.852-1.070)",
		"+2.0 B/row",
		"one INSERT ... SELECT of 100000 rows into a fresh table, 3 runs per variant (alternating), per row: bigserial 1.600 us, snowflake_next_id 1.800 us (medians), +0.200 us/row over bigserial",
		"its table's primary key and its WAL per row at 100000 rows (medians; after a CHECKPOINT each):\n  bigserial           pkey   22.5 B  WAL   190.0 B\n  snowflake_next_id   pkey   22.5 B  WAL   191.0 B\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

// TestRunConfig checks the limits that Run refuses before it connects.
func TestRunConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Clients: 1001}, "clients 1001 out of range [1, 1000]"},
		{Config{Rounds: -1}, "rounds -1 out of range [1, 600]"},
		{Config{Rounds: 601}, "rounds 601 out of range [1, 600]"},
		{Config{Profile: "fast"}, `profile "fast" is not one of magnifying, realistic`},
		{Config{Duration: time.Second, Rounds: 20}, "duration 1s in 20 rounds is too short to measure: want rounds of 100ms or more"},
		{Config{Duration: 50 * time.Millisecond}, "duration 50ms out of range [100ms, 24h]"},
		{Config{Duration: 25 * time.Hour}, "duration 25h out of range [100ms, 24h]"},
		{Config{Duration: -time.Second}, "duration -1s out of range [100ms, 24h]"},
		{Config{Schema: "A"}, "schema"},
		{Config{StatementRows: -2}, "statement rows -2 out of range [1, 10000000] (or -1: none)"},
		{Config{StatementRows: 10_000_001}, "statement rows 10000001 out of range"},
		{Config{StatementRuns: -1}, "statement runs -1 out of range [1, 100]"},
		{Config{StatementRuns: 101}, "statement runs 101 out of range [1, 100]"},
		{Config{Compare: []string{"a", "b", "c", "d", "e"}}, "5 compare functions; at most 4"},
		{Config{Compare: []string{"1x"}}, `compare function "1x" has a part starting with a digit at byte 0; want name or schema.name`},
		{Config{Compare: []string{"p.F", `p."f"()`}}, `compare function "p"."f"() twice (as p.F() and p."f"())`},
	} {
		_, err := Run(t.Context(), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%+v) = %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := Run(t.Context(), Config{DSN: "host=/nonexistent/sfgen-bench", Duration: 5 * time.Second}); err == nil {
		t.Fatal("Run with no server succeeded")
	}
}

// TestNormalizeRounds: by default a round lasts about DefaultRound, so that the
// variants alternate often; never fewer than one round, nor more than
// MaxRounds.
func TestNormalizeRounds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{
		{0, 100}, // DefaultDuration, 20s
		{20 * time.Second, 100},
		{2500 * time.Millisecond, 12},
		{500 * time.Millisecond, 2},
		{150 * time.Millisecond, 1},
		{time.Hour, MaxRounds},
	} {
		c := Config{Duration: tc.d}
		if err := c.Normalize(); err != nil {
			t.Fatalf("duration %v: %v", tc.d, err)
		}
		if c.Rounds != tc.want || c.Clients != DefaultClients || c.SynchronousCommit != "off" {
			t.Errorf("duration %v: %+v, want %d rounds", tc.d, c, tc.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{24 * time.Hour, "24h"},
		{90 * time.Minute, "1h30m"},
		{time.Hour + time.Second, "1h0m1s"},
		{10 * time.Minute, "10m"},
		{90 * time.Second, "1m30s"},
		{10 * time.Second, "10s"},
		{100 * time.Millisecond, "100ms"},
		{0, "0s"},
	} {
		if got := FormatDuration(tc.d); got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestLaterLSN: WAL positions compare as numbers, not as text.
func TestLaterLSN(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"0/FFFFFFF", "0/10000000", "0/10000000"},
		{"0/10000000", "0/FFFFFFF", "0/10000000"},
		{"1/0", "0/FFFFFFFF", "1/0"},
		{"0/16B3740", "0/16B3740", "0/16B3740"},
		{"A/1", "9/FFFFFFFF", "A/1"},
	} {
		if got, err := laterLSN(tc.a, tc.b); err != nil || got != tc.want {
			t.Errorf("laterLSN(%s, %s) = %s, %v; want %s", tc.a, tc.b, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "0", "0/", "x/1", "0/1/2", "1/100000000"} {
		if _, err := laterLSN(bad, "0/1"); err == nil {
			t.Errorf("laterLSN(%q, 0/1) = no error", bad)
		}
	}
}

// TestWriteTextCompared: each compared function gets a row, a ratio line
// and a statement line, after the native generator's.
func TestWriteTextCompared(t *testing.T) {
	r := &Result{
		Clients: 8, Rounds: 2, RoundSeconds: 1, Profile: "magnifying", SynchronousCommit: "off", ServerVersion: "15.18",
		Bigserial:   Variant{Name: "bigserial", Rows: 200, TPS: 100, RoundTPS: []float64{100, 100}},
		Snowflake:   Variant{Name: "snowflake_next_id", Rows: 190, TPS: 95, RoundTPS: []float64{95, 95}},
		Ratio:       0.95,
		RoundRatios: []float64{0.95, 0.95},
		Native:      &Variant{Name: "snowflake_next_id_native", Rows: 198, TPS: 99, RoundTPS: []float64{99, 99}},
		NativeRatio: 0.99, NativeRoundRatios: []float64{0.99, 0.99},
		Compared: []Compared{
			{Variant: Variant{Name: "snowflake.nextval()", Rows: 180, TPS: 90, RoundTPS: []float64{80, 100}, SeqWALPerID: -1, PKeyBytesPerRow: 22.5}, Ratio: 0.9, RoundRatios: []float64{0.8, 1}},
			{Variant: Variant{Name: `"A very long schema"."and a long name"()`, Rows: 170, TPS: 85, RoundTPS: []float64{85, 85}, SeqWALPerID: 12}, Ratio: 0.85, RoundRatios: []float64{0.85, 0.85}},
		},
		Statement: &Statement{Rows: 1000, Runs: 2, BigserialMedianUs: 1, SnowflakeMedianUs: 1.5, ExtraMedianUs: 0.5, NativeMedianUs: 1.1, NativeExtraMedianUs: 0.1,
			Compared: []ComparedStatement{{Name: "snowflake.nextval()", MedianUs: 1.25, ExtraMedianUs: 0.25}, {Name: `"A very long schema"."and a long name"()`, MedianUs: 2, ExtraMedianUs: 1}}},
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"\nsnowflake.nextval()                             180         90       0.0 B          n/a       22.5 B  80/90/100\n",
		"\n\"A very long schema\".\"and a long name\"()        170         85       0.0 B       12.0 B        0.0 B  85/85/85\n",
		"\nratio snowflake_next_id_native/bigserial: 0.990 (round by round: median 0.990, 10th-90th percentile 0.990-0.990)\nratio snowflake.nextval()/bigserial: 0.900 (round by round: median 0.900, 10th-90th percentile 0.820-0.980)\nratio \"A very long schema\".\"and a long name\"()/bigserial: 0.850",
		"\n  and snowflake_next_id_native 1.100 us (median), +0.100 us/row over bigserial\n  and snowflake.nextval() 1.250 us (median), +0.250 us/row over bigserial\n  and \"A very long schema\".\"and a long name\"() 2.000 us (median), +1.000 us/row over bigserial\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

package sfgen

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"
)

// checkLayoutError fails unless err is a *LayoutError wrapping
// ErrInvalidLayout with the given spec, part and value, whose message is
// want (or, when want ends in "...", starts with it).
func checkLayoutError(t *testing.T, call string, err error, spec, part, value, want string) {
	t.Helper()
	var le *LayoutError
	if !errors.As(err, &le) || !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("%s error = %v (%T), want a *LayoutError wrapping ErrInvalidLayout", call, err, err)
		return
	}
	if le.Spec != spec || le.Part != part || le.Value != value {
		t.Errorf("%s error = %+v, want Spec %q, Part %q, Value %q", call, *le, spec, part, value)
	}
	if prefix, ok := strings.CutSuffix(want, "..."); ok {
		if !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("%s error =\n%s\nwant it to start\n%s", call, err, prefix)
		}
	} else if err.Error() != want {
		t.Errorf("%s error =\n%s\nwant\n%s", call, err, want)
	}
}

// TestNewLayoutRefusals has one row for every reason NewLayout refuses a
// layout, each with its exact message.
func TestNewLayoutRefusals(t *testing.T) {
	const (
		int32   = "its largest value, 2^bits-1, must fit the integer (int32) argument sfgen's SQL functions take"
		exact   = "snowflake_timestamp() is exact up to 4253-05-31T22:20:37.928Z"
		twitter = "want 0 to 69858570782377 (Unix milliseconds, 1970-01-01T00:00:00.000Z to 4183-09-24T06:33:02.377Z) with timestamp=41: " +
			exact + " (72057594037928), and a later epoch puts the latest time, epoch + 2^41-1 ms, after it"
		state = "the generator's state (clock << sequence bits) must fit a bigint up to 6429-10-17T02:45:55.327Z (2^47-1 ms), after the latest time any layout can have (4253-05-31T22:20:37.928Z)"
	)
	for _, tc := range []struct {
		name           string
		epoch          int64
		ts, dc, m, seq uint8
		part, value    string
		msg            string
	}{
		{"no timestamp bits", TwitterEpoch, 0, 5, 5, 12, "timestamp", "0",
			"invalid layout: timestamp 0: want 1 to 46 bits: every field needs at least one bit"},
		{"no datacenter bits", TwitterEpoch, 41, 0, 10, 12, "datacenter", "0",
			"invalid layout: datacenter 0: want 1 to 31 bits: every field needs at least one bit"},
		{"no machine bits", TwitterEpoch, 41, 10, 0, 12, "machine", "0",
			"invalid layout: machine 0: want 1 to 31 bits: every field needs at least one bit"},
		{"no sequence bits", TwitterEpoch, 41, 11, 11, 0, "sequence", "0",
			"invalid layout: sequence 0: want 1 to 31 bits: every field needs at least one bit"},
		{"timestamp past snowflake_timestamp's exact range from any epoch", 0, 47, 5, 5, 6, "timestamp", "47",
			"invalid layout: timestamp 47: want 1 to 46 bits: " + exact + ", and from epoch 0 47 bits of milliseconds already end after it"},
		{"timestamp 255 bits", 0, 255, 1, 1, 1, "timestamp", "255", "invalid layout: timestamp 255: want 1 to 46 bits: ..."},
		{"datacenter past int32", 0, 30, 32, 1, 0, "datacenter", "32", "invalid layout: datacenter 32: want 1 to 31 bits: " + int32},
		{"machine past int32", 0, 30, 1, 32, 0, "machine", "32", "invalid layout: machine 32: want 1 to 31 bits: " + int32},
		{"sequence past int32", 0, 30, 1, 1, 32, "sequence", "32", "invalid layout: sequence 32: want 1 to 31 bits: " + int32},
		{"62 bits", TwitterEpoch, 41, 5, 5, 11, "widths", "62",
			"invalid layout: widths 62: timestamp 41 + datacenter 5 + machine 5 + sequence 11 bits; want 63, the bits of a positive bigint"},
		{"64 bits", TwitterEpoch, 42, 5, 5, 12, "widths", "64",
			"invalid layout: widths 64: timestamp 42 + datacenter 5 + machine 5 + sequence 12 bits; want 63, the bits of a positive bigint"},
		{"widths wrap uint8 sums", 0, 46, 31, 31, 31, "widths", "139", "invalid layout: widths 139: ..."},
		// The brief's example: its last time is in 1970, but today's
		// clock << 23 wraps.
		{"state wraps", 0, 30, 5, 5, 23, "sequence", "23",
			"invalid layout: sequence 23: want 1 to 16 bits: " + state + "; with 23 bits it wraps from 2004-11-03T19:53:47.776Z (2^40 ms)"},
		{"17 sequence bits", 0, 40, 3, 3, 17, "sequence", "17",
			"invalid layout: sequence 17: want 1 to 16 bits: " + state + "; with 17 bits it wraps from 4199-11-24T01:22:57.664Z (2^46 ms)"},
		{"negative epoch", -1, 41, 5, 5, 12, "epoch", "-1", "invalid layout: epoch -1: " + twitter},
		{"latest time past snowflake_timestamp's exact range", 69858570782378, 41, 5, 5, 12, "epoch", "69858570782378", "invalid layout: epoch 69858570782378: " + twitter},
		{"int64 epoch", math.MaxInt64, 41, 5, 5, 12, "epoch", "9223372036854775807", "invalid layout: epoch 9223372036854775807: " + twitter},
		{"epoch plus span past int64", math.MaxInt64 - 10, 41, 5, 5, 12, "epoch", "9223372036854775797", "invalid layout: epoch 9223372036854775797: " + twitter},
		{"46 bits", 72057594037928 - (1<<46 - 1) + 1, 46, 1, 1, 15, "epoch", "1688849860266",
			"invalid layout: epoch 1688849860266: want 0 to 1688849860265 (Unix milliseconds, 1970-01-01T00:00:00.000Z to 2023-07-08T20:57:40.265Z) with timestamp=46: " +
				exact + " (72057594037928), and a later epoch puts the latest time, epoch + 2^46-1 ms, after it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLayout(tc.epoch, tc.ts, tc.dc, tc.m, tc.seq)
			if l != (Layout{}) {
				t.Errorf("NewLayout returned %v alongside its error, want the zero Layout", l)
			}
			checkLayoutError(t, "NewLayout", err, "", tc.part, tc.value, tc.msg)
		})
	}
}

// TestNewLayoutLimits checks layouts at each limit NewLayout enforces, and
// one past it.
func TestNewLayoutLimits(t *testing.T) {
	for _, tc := range []struct {
		name           string
		epoch          int64
		ts, dc, m, seq uint8
	}{
		{"twitter", TwitterEpoch, 41, 5, 5, 12},
		{"discord", DiscordEpoch, 41, 5, 5, 12},
		{"46 timestamp bits from 1970", 0, 46, 5, 4, 8},
		{"latest epoch for 46 bits", 1688849860265, 46, 1, 1, 15},
		{"31 bits of datacenter", 0, 30, 31, 1, 1},
		{"31 bits of machine", 0, 30, 1, 31, 1},
		{"16 bits of sequence", 0, 30, 1, 16, 16},
		{"16 bits of sequence, latest time at the limit", 72057594037928 - (1<<44 - 1), 44, 1, 2, 16},
		{"one-bit timestamp", 0, 1, 31, 30, 1},
		{"latest epoch, twitter widths", 69858570782377, 41, 5, 5, 12},
	} {
		l, err := NewLayout(tc.epoch, tc.ts, tc.dc, tc.m, tc.seq)
		if err != nil {
			t.Errorf("%s: NewLayout(%d, %d, %d, %d, %d) = %v", tc.name, tc.epoch, tc.ts, tc.dc, tc.m, tc.seq, err)
			continue
		}
		checkDerived(t, l, tc.epoch, tc.ts, tc.dc, tc.m, tc.seq)
	}
	for _, tc := range []struct {
		name           string
		epoch          int64
		ts, dc, m, seq uint8
	}{
		{"one past the latest epoch for 46 bits", 1688849860266, 46, 1, 1, 15},
		{"one past the latest epoch, twitter widths", 69858570782378, 41, 5, 5, 12},
		{"17 bits of sequence", 0, 30, 1, 15, 17},
		{"47 timestamp bits from 1970", 0, 47, 5, 4, 7},
	} {
		if _, err := NewLayout(tc.epoch, tc.ts, tc.dc, tc.m, tc.seq); !errors.Is(err, ErrInvalidLayout) {
			t.Errorf("%s: error = %v, want ErrInvalidLayout", tc.name, err)
		}
	}
}

// TestSQLLimits works out sqlMaxMillis and stateMaxMillis from what they
// stand for rather than taking them from the package: the last
// millisecond ms such that float8(ms) * 1000, as PostgreSQL multiplies an
// interval, is exact for it and every millisecond before; and the last
// clock reading, 2^47-1, below the first power of two after it.
func TestSQLLimits(t *testing.T) {
	if sqlExactMillis != sqlMaxMillis {
		t.Errorf("sqlMaxMillis = %d, want %d", sqlMaxMillis, sqlExactMillis)
	}
	if next := sqlExactMillis + 1; exactTimes1000(next) {
		t.Errorf("float8(%d) * 1000 is exact; sqlMaxMillis is not the last exact millisecond", next)
	}
	if got := time.UnixMilli(sqlMaxMillis).UTC().Format(time.RFC3339Nano); got != "4253-05-31T22:20:37.928Z" {
		t.Errorf("sqlMaxMillis is %s", got)
	}
	if stateMaxMillis>>(63-maxSequenceBits-1) != 1 || stateMaxMillis <= sqlMaxMillis || stateMaxMillis/2 > sqlMaxMillis {
		t.Errorf("stateMaxMillis = %d, want 2^47-1, the last millisecond below the first power of two after sqlMaxMillis", stateMaxMillis)
	}
}

// exactTimes1000 reports whether float8(ms) * 1000 is ms*1000 exactly.
func exactTimes1000(ms int64) bool {
	f := float64(ms)
	p := new(big.Float).SetFloat64(f * 1000)
	want := new(big.Float).SetInt(new(big.Int).Mul(big.NewInt(ms), big.NewInt(1000)))
	return p.Cmp(want) == 0
}

// sqlExactMillis is the last millisecond ms for which float8(ms)*1000
// and every product before it is exact, found by search: every ms with
// ms*125 < 2^53 is (ms*1000 is ms*125 times a power of two), so the search
// starts there.
var sqlExactMillis = func() int64 {
	ms := int64(1<<53)/125 - 1000
	for exactTimes1000(ms + 1) {
		ms++
	}
	return ms
}()

// pgMaxMillis is PostgreSQL's last timestamptz, 294276-12-31
// 23:59:59.999999 UTC, in whole Unix milliseconds, worked out from the
// calendar rather than taken from the package.
var pgMaxMillis = time.Date(294277, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() - 1

// oracleAccepts says, with math/big, whether the layout is one that Go
// and the SQL can represent: widths of at least one bit adding up to 63,
// node and sequence maxima that fit an int32, an epoch from 0, a latest
// time no later than the last that snowflake_timestamp() dates exactly
// (sqlExactMillis), every value the SQL derives from the layout inside
// the int64 range, and the generator's state, clock << sequence bits,
// inside it too for every clock reading below the first power of two
// after sqlExactMillis.
func oracleAccepts(epoch int64, ts, dc, m, seq uint8) bool {
	if ts == 0 || dc == 0 || m == 0 || seq == 0 || int(ts)+int(dc)+int(m)+int(seq) != 63 || epoch < 0 {
		return false
	}
	pow := func(n uint8) *big.Int { return new(big.Int).Lsh(big.NewInt(1), uint(n)) }
	minus1 := func(x *big.Int) *big.Int { return new(big.Int).Sub(x, big.NewInt(1)) }
	int32Max, int64Max := big.NewInt(math.MaxInt32), big.NewInt(math.MaxInt64)
	for _, w := range []uint8{dc, m, seq} {
		if minus1(pow(w)).Cmp(int32Max) > 0 {
			return false
		}
	}
	maxTS := new(big.Int).Add(big.NewInt(epoch), minus1(pow(ts)))
	if maxTS.Cmp(big.NewInt(sqlExactMillis)) > 0 {
		return false
	}
	clock := minus1(pow(uint8(big.NewInt(sqlExactMillis).BitLen())))
	if new(big.Int).Add(new(big.Int).Lsh(clock, uint(seq)), minus1(pow(seq))).Cmp(int64Max) > 0 {
		return false
	}
	maxState := new(big.Int).Add(new(big.Int).Mul(maxTS, pow(seq)), minus1(pow(seq)))
	minState := new(big.Int).Mul(big.NewInt(epoch), pow(seq))
	for _, v := range []*big.Int{maxTS, maxState, minState} {
		if v.Cmp(int64Max) > 0 {
			return false
		}
	}
	return true
}

// checkDerived checks every value the package and the SQL derive from an
// accepted layout against math/big: the limits, the shifts, the largest
// ID, snowflake_next_id()'s MinState and MaxState, and that the largest
// fields compose to 2^63-1 and back.
func checkDerived(t *testing.T, l Layout, epoch int64, ts, dc, m, seq uint8) {
	t.Helper()
	pow := func(n uint) *big.Int { return new(big.Int).Lsh(big.NewInt(1), n) }
	minus1 := func(x *big.Int) *big.Int { return new(big.Int).Sub(x, big.NewInt(1)) }
	eq := func(what string, got int64, want *big.Int) {
		t.Helper()
		if !want.IsInt64() || want.Int64() != got {
			t.Errorf("%v: %s = %d, want %s", l, what, got, want)
		}
	}
	if l.Epoch() != epoch || l.Bits(FieldTimestamp) != uint(ts) || l.Bits(FieldDatacenter) != uint(dc) ||
		l.Bits(FieldMachine) != uint(m) || l.Bits(FieldSequence) != uint(seq) {
		t.Fatalf("NewLayout(%d, %d, %d, %d, %d) = %v", epoch, ts, dc, m, seq, l)
	}
	maxTS := new(big.Int).Add(big.NewInt(epoch), minus1(pow(uint(ts))))
	eq("Max(timestamp)", l.Max(FieldTimestamp), maxTS)
	eq("Max(datacenter)", l.Max(FieldDatacenter), minus1(pow(uint(dc))))
	eq("Max(machine)", l.Max(FieldMachine), minus1(pow(uint(m))))
	eq("Max(sequence)", l.Max(FieldSequence), minus1(pow(uint(seq))))
	eq("Max(id)", l.Max(FieldID), minus1(pow(63)))
	eq("Shift(timestamp)", int64(l.Shift(FieldTimestamp)), big.NewInt(int64(dc)+int64(m)+int64(seq)))
	eq("Shift(datacenter)", int64(l.Shift(FieldDatacenter)), big.NewInt(int64(m)+int64(seq)))
	eq("Shift(machine)", int64(l.Shift(FieldMachine)), big.NewInt(int64(seq)))
	// What internal/sqlgen derives for the templates.
	s := l.Bits(FieldSequence)
	eq("MinState", l.Epoch()<<s, new(big.Int).Mul(big.NewInt(epoch), pow(uint(seq))))
	eq("MaxState", l.Max(FieldTimestamp)<<s|l.Max(FieldSequence),
		new(big.Int).Add(new(big.Int).Mul(maxTS, pow(uint(seq))), minus1(pow(uint(seq)))))
	eq("LowBitsMask", 1<<l.Shift(FieldTimestamp)-1, minus1(pow(uint(dc)+uint(m)+uint(seq))))
	if maxTS.Cmp(big.NewInt(sqlExactMillis)) > 0 {
		t.Errorf("%v: latest time %s is after the last that snowflake_timestamp() dates exactly", l, maxTS)
	}
	if got := l.MaxTime().UnixMilli(); got != l.Max(FieldTimestamp) {
		t.Errorf("%v: MaxTime() = %d ms, want %d", l, got, l.Max(FieldTimestamp))
	}
	// The largest fields fill every bit; the smallest none.
	id, err := l.Compose(l.Max(FieldTimestamp), l.Max(FieldDatacenter), l.Max(FieldMachine), l.Max(FieldSequence))
	if err != nil || id != math.MaxInt64 {
		t.Errorf("%v: Compose(largest fields) = %d, %v; want 2^63-1", l, id, err)
	}
	if id, err := l.Compose(l.Min(FieldTimestamp), 0, 0, 0); err != nil || id != 0 {
		t.Errorf("%v: Compose(smallest fields) = %d, %v; want 0", l, id, err)
	}
	p, err := l.Decompose(math.MaxInt64)
	if want := (Parts{l.Max(FieldTimestamp), l.Max(FieldDatacenter), l.Max(FieldMachine), l.Max(FieldSequence)}); err != nil || p != want {
		t.Errorf("%v: Decompose(2^63-1) = %+v, %v; want %+v", l, p, err, want)
	}
	if _, err := l.Compose(l.Max(FieldTimestamp)+1, 0, 0, 0); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("%v: Compose(latest+1) error = %v, want ErrOutOfRange", l, err)
	}
	// String, ParseLayout and the text form give the layout back.
	if back, err := ParseLayout(l.String()); err != nil || back != l {
		t.Errorf("ParseLayout(%q) = %v, %v; want the layout back", l.String(), back, err)
	}
}

// TestNewLayoutEveryWidth runs every split of 63 bits into four fields of
// at least one bit each, at the epochs around the limits the oracle
// computes: NewLayout accepts exactly what oracleAccepts does, and every
// layout it accepts has its derived values right.
func TestNewLayoutEveryWidth(t *testing.T) {
	accepted, bounded := 0, 0
	for ts := 1; ts <= 60; ts++ {
		for dc := 1; ts+dc <= 62; dc++ {
			for m := 1; ts+dc+m <= 62; m++ {
				seq := 63 - ts - dc - m
				w := [4]uint8{uint8(ts), uint8(dc), uint8(m), uint8(seq)}
				epochs := []int64{-1, 0, 1, TwitterEpoch, math.MaxInt64}
				if oracleAccepts(0, w[0], w[1], w[2], w[3]) {
					// The latest epoch the oracle accepts, by bisection.
					lo, hi := int64(0), int64(math.MaxInt64)
					for lo < hi {
						mid := hi - (hi-lo)/2 // > lo, and no overflow
						if oracleAccepts(mid, w[0], w[1], w[2], w[3]) {
							lo = mid
						} else {
							hi = mid - 1
						}
					}
					epochs = append(epochs, lo-1, lo, lo+1)
					// Two worked out by hand: 72057594037928 - (2^bits - 1).
					if want, ok := map[[4]uint8]int64{{41, 5, 5, 12}: 69858570782377, {46, 1, 1, 15}: 1688849860265}[w]; ok && lo != want {
						t.Fatalf("the oracle's latest epoch for %v is %d, want %d", w, lo, want)
					}
					bounded++
				}
				for _, e := range epochs {
					l, err := NewLayout(e, w[0], w[1], w[2], w[3])
					want := oracleAccepts(e, w[0], w[1], w[2], w[3])
					if (err == nil) != want {
						t.Fatalf("NewLayout(%d, %d, %d, %d, %d) = %v, %v; the oracle says accepted: %v", e, w[0], w[1], w[2], w[3], l, err, want)
					}
					if err != nil {
						var le *LayoutError
						if !errors.As(err, &le) {
							t.Fatalf("NewLayout(%d, %v) error %v is not a *LayoutError", e, w, err)
						}
						continue
					}
					accepted++
					checkDerived(t, l, e, w[0], w[1], w[2], w[3])
				}
			}
		}
	}
	if accepted == 0 || bounded < 10000 {
		t.Fatalf("%d layouts accepted, %d splits with a latest epoch", accepted, bounded)
	}
}

// FuzzNewLayout checks NewLayout on any epoch and widths against
// oracleAccepts, and every accepted layout's derived values with math/big.
func FuzzNewLayout(f *testing.F) {
	for _, c := range []struct {
		epoch          int64
		ts, dc, m, seq uint8
	}{
		{TwitterEpoch, 41, 5, 5, 12}, {DiscordEpoch, 41, 5, 5, 12}, {0, 46, 5, 4, 8}, {1688849860265, 46, 1, 1, 15},
		{69858570782377, 41, 5, 5, 12}, {69858570782378, 41, 5, 5, 12}, {-1, 41, 5, 5, 12}, {0, 47, 5, 4, 7},
		{0, 30, 1, 16, 16}, {0, 30, 1, 15, 17}, {0, 30, 1, 1, 31}, {0, 30, 1, 1, 32}, {0, 1, 31, 30, 1},
		{math.MaxInt64, 41, 5, 5, 12}, {0, 255, 255, 255, 255}, {1688849860266, 46, 1, 1, 15},
	} {
		f.Add(c.epoch, c.ts, c.dc, c.m, c.seq)
	}
	f.Fuzz(func(t *testing.T, epoch int64, ts, dc, m, seq uint8) {
		l, err := NewLayout(epoch, ts, dc, m, seq)
		if want := oracleAccepts(epoch, ts, dc, m, seq); (err == nil) != want {
			t.Fatalf("NewLayout(%d, %d, %d, %d, %d) = %v, %v; the oracle says accepted: %v", epoch, ts, dc, m, seq, l, err, want)
		}
		if err != nil {
			var le *LayoutError
			if !errors.As(err, &le) || !errors.Is(err, ErrInvalidLayout) || l != (Layout{}) {
				t.Fatalf("NewLayout(%d, %d, %d, %d, %d) = %v, %v (%T); want the zero Layout and a *LayoutError", epoch, ts, dc, m, seq, l, err, err)
			}
			return
		}
		checkDerived(t, l, epoch, ts, dc, m, seq)
	})
}

// TestPostgresMaxMillis checks the constant against the calendar.
func TestPostgresMaxMillis(t *testing.T) {
	if postgresMaxMillis != pgMaxMillis {
		t.Errorf("postgresMaxMillis = %d, want %d (294276-12-31T23:59:59.999Z)", postgresMaxMillis, pgMaxMillis)
	}
}

func TestParseLayout(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Layout
	}{
		{"twitter", Twitter()},
		{"discord", Discord()},
		{"epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12", Twitter()},
		{"epoch=1420070400000 timestamp=41 datacenter=5 machine=5 sequence=12", Discord()},
		{"epoch=0 timestamp=43 datacenter=4 machine=4 sequence=12", newLayout(0, 43, 4, 4, 12)},
	} {
		got, err := ParseLayout(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseLayout(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, l := range []Layout{Twitter(), Discord()} {
		if got, err := ParseLayout(l.String()); err != nil || got != l {
			t.Errorf("ParseLayout(%v.String()) = %v, %v", l, got, err)
		}
	}
}

// TestParseLayoutRefusals has one row for every reason ParseLayout refuses
// its input, each with its exact message and the part it names.
func TestParseLayoutRefusals(t *testing.T) {
	const ok = "epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12"
	const want = `want a preset (twitter, discord) or a spec such as "` + ok + `"`
	for _, tc := range []struct {
		name        string
		in          string
		part, value string
		msg         string // after `invalid layout "<in>": `
	}{
		{"empty", "", "spec", "", "spec: empty; " + want},
		{"unknown preset", "snowflake", "spec", "", "spec: not a preset name or a spec; " + want},
		{"preset in capitals", "Twitter", "spec", "", "spec: not a preset name or a spec; " + want},
		{"preset with space", "twitter ", "spec", "", "spec: not a preset name or a spec; " + want},
		{"leading space", " " + ok, "spec", "", `spec: want key=value pairs separated by single spaces, as in "` + ok + `"`},
		{"trailing space", ok + " ", "spec", "", `spec: want key=value pairs separated by single spaces, as in "` + ok + `"`},
		{"double space", strings.Replace(ok, " ", "  ", 1), "spec", "", "spec: want key=value pairs separated by single spaces, ..."},
		{"tab", strings.Replace(ok, " ", "\t", 1), "spec", "", "spec: want key=value pairs separated by single spaces, ..."},
		{"not key=value", "epoch=1288834974657 timestamp 41 datacenter=5 machine=5 sequence=12", "timestamp", "", "timestamp: not key=value"},
		{"unknown key", ok + " node=3", "node", "", "node: unknown key; want epoch, timestamp, datacenter, machine, sequence"},
		{"key in capitals", strings.Replace(ok, "epoch", "Epoch", 1), "Epoch", "", "Epoch: unknown key; want epoch, timestamp, datacenter, machine, sequence"},
		{"duplicate", ok + " machine=5", "machine", "", "machine: given twice"},
		{"duplicate, other value", "epoch=0 timestamp=41 datacenter=5 machine=5 sequence=12 epoch=1", "epoch", "", "epoch: given twice"},
		{"missing", "epoch=0 timestamp=41 machine=5 sequence=12", "datacenter", "", "datacenter: missing"},
		{"missing last", "epoch=0 timestamp=41 datacenter=5 machine=5", "sequence", "", "sequence: missing"},
		{"out of order", "timestamp=41 epoch=0 datacenter=5 machine=5 sequence=12", "epoch", "", "epoch: out of order; want epoch, timestamp, datacenter, machine, sequence in that order"},
		{"empty value", "epoch= timestamp=41 datacenter=5 machine=5 sequence=12", "epoch", "", "epoch: not a decimal integer (digits, no '+', no leading zeros)"},
		{"not a number", "epoch=0 timestamp=4l datacenter=5 machine=5 sequence=12", "timestamp", "4l", `timestamp "4l": not a decimal integer (digits, no '+', no leading zeros)`},
		{"plus sign", "epoch=+0 timestamp=41 datacenter=5 machine=5 sequence=12", "epoch", "+0", `epoch "+0": not a decimal integer (digits, no '+', no leading zeros)`},
		{"leading zero", "epoch=0 timestamp=041 datacenter=5 machine=5 sequence=12", "timestamp", "041", `timestamp "041": not a decimal integer (digits, no '+', no leading zeros)`},
		{"minus zero", "epoch=-0 timestamp=41 datacenter=5 machine=5 sequence=12", "epoch", "-0", `epoch "-0": not a decimal integer (digits, no '+', no leading zeros)`},
		{"hex", "epoch=0x10 timestamp=41 datacenter=5 machine=5 sequence=12", "epoch", "0x10", `epoch "0x10": not a decimal integer (digits, no '+', no leading zeros)`},
		{"fraction", "epoch=0 timestamp=41 datacenter=5 machine=5 sequence=12.0", "sequence", "12.0", `sequence "12.0": not a decimal integer (digits, no '+', no leading zeros)`},
		{"epoch past int64", "epoch=9223372036854775808 timestamp=41 datacenter=5 machine=5 sequence=12", "epoch", "9223372036854775808", "epoch 9223372036854775808: does not fit an int64"},
		// What NewLayout refuses, with the spec.
		{"widths", "epoch=0 timestamp=42 datacenter=5 machine=5 sequence=12", "widths", "64",
			"widths 64: timestamp 42 + datacenter 5 + machine 5 + sequence 12 bits; want 63, the bits of a positive bigint"},
		{"a width that wraps uint8", "epoch=0 timestamp=297 datacenter=5 machine=5 sequence=12", "timestamp", "297", "timestamp 297: want 1 to 46 bits: ..."},
		{"a width of 256+12", "epoch=0 timestamp=41 datacenter=5 machine=5 sequence=268", "sequence", "268", "sequence 268: want 1 to 31 bits: ..."},
		{"negative width", "epoch=0 timestamp=41 datacenter=-5 machine=15 sequence=12", "datacenter", "-5", "datacenter -5: want 1 to 31 bits: every field needs at least one bit"},
		{"negative epoch", "epoch=-1 timestamp=41 datacenter=5 machine=5 sequence=12", "epoch", "-1", "epoch -1: want 0 to 69858570782377 ..."},
		{"late epoch", "epoch=69858570782378 timestamp=41 datacenter=5 machine=5 sequence=12", "epoch", "69858570782378", "epoch 69858570782378: want 0 to 69858570782377 ..."},
		{"state", "epoch=0 timestamp=30 datacenter=5 machine=5 sequence=23", "sequence", "23", "sequence 23: want 1 to 16 bits: ..."},
		{"int32", "epoch=0 timestamp=30 datacenter=1 machine=1 sequence=32", "sequence", "32", "sequence 32: want 1 to 31 bits: ..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ParseLayout(tc.in)
			if l != (Layout{}) {
				t.Errorf("ParseLayout returned %v alongside its error, want the zero Layout", l)
			}
			prefix := "invalid layout " + strconv.Quote(tc.in) + ": "
			if tc.in == "" {
				prefix = "invalid layout: "
			}
			checkLayoutError(t, "ParseLayout("+tc.in+")", err, tc.in, tc.part, tc.value, prefix+tc.msg)
		})
	}
}

// FuzzParseLayout: whatever the text, ParseLayout either returns a layout
// whose String is the text (or that is the preset it names), or the zero
// Layout and a *LayoutError whose Spec is the text.
func FuzzParseLayout(f *testing.F) {
	for _, s := range []string{
		"twitter", "discord", Twitter().String(), Discord().String(), "", " ", "=", "epoch=0",
		"epoch=0 timestamp=43 datacenter=4 machine=4 sequence=12", "epoch=0 timestamp=297 datacenter=5 machine=5 sequence=12",
		"epoch=-1 timestamp=41 datacenter=5 machine=5 sequence=12", "epoch=1 epoch=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLayout(s)
		if err != nil {
			var le *LayoutError
			if !errors.As(err, &le) || le.Spec != s || l != (Layout{}) {
				t.Fatalf("ParseLayout(%q) = %v, %v; want the zero Layout and a *LayoutError for the text", s, l, err)
			}
			return
		}
		if p, ok := layoutByName(s); ok {
			if l != p {
				t.Fatalf("ParseLayout(%q) = %v, want the preset", s, l)
			}
			return
		}
		if l.String() != s {
			t.Fatalf("ParseLayout(%q) = %v, whose String differs", s, l)
		}
		checkDerived(t, l, l.Epoch(), uint8(l.Bits(FieldTimestamp)), uint8(l.Bits(FieldDatacenter)), uint8(l.Bits(FieldMachine)), uint8(l.Bits(FieldSequence)))
	})
}

func TestPresets(t *testing.T) {
	if got := strings.Join(presetNames(), " "); got != "twitter discord" {
		t.Errorf("presetNames() = %s", got)
	}
	for _, tc := range []struct {
		name string
		want Layout
		spec string
	}{
		{"twitter", Twitter(), "epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12"},
		{"discord", Discord(), "epoch=1420070400000 timestamp=41 datacenter=5 machine=5 sequence=12"},
	} {
		l, ok := layoutByName(tc.name)
		if !ok || l != tc.want || l.String() != tc.spec {
			t.Errorf("layoutByName(%q) = %v, %v; want %s", tc.name, l, ok, tc.spec)
		}
		if got := tc.want.Name(); got != tc.name {
			t.Errorf("%s.Name() = %q; want %q", tc.spec, got, tc.name)
		}
	}
	custom := mustLayout(TwitterEpoch, 41, 4, 6, 12)
	if got, want := custom.Name(), custom.String(); got != want {
		t.Errorf("a custom layout's Name() = %q; want its spec %q", got, want)
	}
	if back, err := ParseLayout(custom.Name()); err != nil || back != custom {
		t.Errorf("ParseLayout(%q) = %v, %v; want the layout back", custom.Name(), back, err)
	}
	if _, ok := layoutByName("Twitter"); ok {
		t.Error(`layoutByName("Twitter") found a layout; names are lower case`)
	}
	if got, want := Discord().MinTime().Format(time.RFC3339Nano), "2015-01-01T00:00:00Z"; got != want {
		t.Errorf("Discord.MinTime() = %s, want %s", got, want)
	}
	if got, want := Discord().MaxTime().Format("2006-01-02T15:04:05.000Z"), "2084-09-06T15:47:35.551Z"; got != want {
		t.Errorf("Discord.MaxTime() = %s, want %s", got, want)
	}
}

// TestDiscordVector: Discord documents 175928847299117063 as
// 2016-04-30T11:18:25.796Z, worker 1, process 0, increment 7.
func TestDiscordVector(t *testing.T) {
	const id = 175928847299117063
	p, err := Discord().Decompose(id)
	if err != nil || p != (Parts{Timestamp: 1462015105796, Datacenter: 1, Machine: 0, Sequence: 7}) {
		t.Fatalf("Discord.Decompose(%d) = %+v, %v; want timestamp 1462015105796, datacenter 1, machine 0, sequence 7", id, p, err)
	}
	if got := p.Time().Format("2006-01-02T15:04:05.000Z07:00"); got != "2016-04-30T11:18:25.796Z" {
		t.Errorf("time = %s, want 2016-04-30T11:18:25.796Z", got)
	}
	if got, err := Discord().Compose(1462015105796, 1, 0, 7); err != nil || got != id {
		t.Errorf("Discord.Compose(1462015105796, 1, 0, 7) = %d, %v; want %d", got, err, id)
	}
	// The same number is another time in the Twitter layout.
	if p, _ := Twitter().Decompose(id); p.Timestamp != 1462015105796-DiscordEpoch+TwitterEpoch {
		t.Errorf("Twitter.Decompose(%d).Timestamp = %d", id, p.Timestamp)
	}
}

// TestZeroLayout: the zero Layout is refused by everything that composes,
// decomposes or generates, with ErrZeroLayout, for every input (it must
// not act as any layout, Twitter's included).
func TestZeroLayout(t *testing.T) {
	var z Layout
	check := func(call string, got ID, err error) {
		t.Helper()
		if !errors.Is(err, ErrZeroLayout) || !errors.Is(err, ErrInvalidLayout) || got != 0 {
			t.Errorf("Layout{}.%s = %d, %v; want 0 and ErrZeroLayout", call, got, err)
		}
	}
	for _, in := range [][4]int64{{0, 0, 0, 0}, {TwitterEpoch, 0, 0, 0}, {TwitterEpoch + 1000, 1, 1, 0}, {-1, -1, -1, -1}, {math.MaxInt64, 0, 0, 0}} {
		id, err := z.Compose(in[0], in[1], in[2], in[3])
		check("Compose", id, err)
	}
	for _, id := range []ID{0, 1, 4194439168, math.MaxInt64, -1} {
		p, err := z.Decompose(id)
		if !errors.Is(err, ErrZeroLayout) || p != (Parts{}) {
			t.Errorf("Layout{}.Decompose(%d) = %+v, %v; want ErrZeroLayout", id, p, err)
		}
	}
	for _, tm := range []time.Time{time.Unix(0, 0), time.UnixMilli(TwitterEpoch + 1000), time.Now(), {}} {
		id, err := z.FirstID(tm)
		check("FirstID", id, err)
		id, err = z.LastID(tm)
		check("LastID", id, err)
	}
	if g, err := z.NewGenerator(0, 0); g != nil || !errors.Is(err, ErrZeroLayout) {
		t.Errorf("Layout{}.NewGenerator(0, 0) = %v, %v; want ErrZeroLayout", g, err)
	}
	if b, err := z.MarshalText(); b != nil || !errors.Is(err, ErrZeroLayout) {
		t.Errorf("Layout{}.MarshalText() = %q, %v; want ErrZeroLayout", b, err)
	}
	var g Generator
	id, err := g.Next()
	check("zero Generator's Next", id, err)
	if want := "invalid layout: the zero Layout (use Twitter, Discord, NewLayout or ParseLayout)"; ErrZeroLayout.Error() != want {
		t.Errorf("ErrZeroLayout = %q, want %q", ErrZeroLayout, want)
	}
}

func TestLayoutText(t *testing.T) {
	for _, l := range []Layout{Twitter(), Discord(), newLayout(0, 43, 4, 4, 12)} {
		b, err := l.MarshalText()
		if err != nil || string(b) != l.String() {
			t.Errorf("%v.MarshalText() = %q, %v", l, b, err)
		}
		var back Layout
		if err := back.UnmarshalText(b); err != nil || back != l {
			t.Errorf("UnmarshalText(%q) = %v, %v", b, back, err)
		}
	}
	l := Discord()
	if err := l.UnmarshalText([]byte("twitter")); err != nil || l != Twitter() {
		t.Errorf("UnmarshalText(twitter) = %v, %v", l, err)
	}
	err := l.UnmarshalText([]byte("epoch=0"))
	if !errors.Is(err, ErrInvalidLayout) || l != Twitter() {
		t.Errorf("UnmarshalText(epoch=0) = %v, %v; want an error and the layout kept", l, err)
	}
}

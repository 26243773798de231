package sfgen

import (
	"errors"
	"math"
	"testing"
	"time"
)

// readmeID is the README formula over int64s, for the tables below (whose
// values are all in range): ((t − 1288834974657) × 2^22) + datacenter ×
// 2^17 + machine × 2^12 + sequence.
func readmeID(ts, dc, m, seq int64) ID {
	return ID((ts-readmeEpoch)*tsUnit + dc*dcUnit + m*machineUnit + seq)
}

// first and last are the IDs FirstID and LastID give at millisecond ms;
// tooEarly and tooLate the errors, with the millisecond they name.
func first(ms int64) rangeAnswer    { return rangeAnswer{id: readmeID(ms, 0, 0, 0)} }
func last(ms int64) rangeAnswer     { return rangeAnswer{id: readmeID(ms, 31, 31, 4095)} }
func rangeErr(ms int64) rangeAnswer { return rangeAnswer{err: true, errMS: ms} }

var (
	zeroID  = rangeAnswer{id: 0}
	largest = rangeAnswer{id: readmeMaxID}
)

// at returns the Unix millisecond ms plus d.
func at(ms int64, d time.Duration) time.Time { return time.UnixMilli(ms).Add(d).UTC() }

// rangeCases are the boundaries of FirstID and LastID: each side of a
// whole millisecond by a nanosecond and a microsecond, the epoch, the last
// millisecond of the layout (2080-07-10T17:30:30.207Z to .208Z) and past
// it, and times so far away their milliseconds do not fit in an int64.
// Every expected ID is the README formula at a millisecond written out by
// hand: FirstID rounds t up to a whole millisecond, LastID down.
var rangeCases = []struct {
	name        string
	t           time.Time
	first, last rangeAnswer
}{
	{"worked example, exact", at(1288834975657, 0), first(1288834975657), last(1288834975657)},
	{"worked example + 1ns", at(1288834975657, time.Nanosecond), first(1288834975658), last(1288834975657)},
	{"worked example - 1ns", at(1288834975657, -time.Nanosecond), first(1288834975657), last(1288834975656)},
	{"worked example + 1µs", at(1288834975657, time.Microsecond), first(1288834975658), last(1288834975657)},
	{"worked example - 1µs", at(1288834975657, -time.Microsecond), first(1288834975657), last(1288834975656)},
	{"worked example + 999999ns", at(1288834975657, 999999), first(1288834975658), last(1288834975657)},
	{"README range start", time.Date(2023, 11, 14, 22, 13, 30, 0, time.UTC), rangeAnswer{id: 1724551152399286272}, last(1700000010000)},
	{"README range end", time.Date(2023, 11, 14, 22, 13, 31, 0, time.UTC), rangeAnswer{id: 1724551156593590272}, last(1700000011000)},
	{"another zone, same instant", time.Date(2023, 11, 15, 3, 43, 30, 500, time.FixedZone("IST", 5*3600+1800)), first(1700000010001), last(1700000010000)},

	{"epoch", at(readmeEpoch, 0), zeroID, last(readmeEpoch)},
	{"epoch + 1ns", at(readmeEpoch, time.Nanosecond), first(readmeEpoch + 1), last(readmeEpoch)},
	{"epoch + 1µs", at(readmeEpoch, time.Microsecond), first(readmeEpoch + 1), last(readmeEpoch)},
	{"epoch + 1ms", at(readmeEpoch, time.Millisecond), first(readmeEpoch + 1), last(readmeEpoch + 1)},
	{"epoch - 1ns", at(readmeEpoch, -time.Nanosecond), zeroID, rangeErr(readmeEpoch - 1)},
	{"epoch - 1µs", at(readmeEpoch, -time.Microsecond), zeroID, rangeErr(readmeEpoch - 1)},
	{"epoch - 1ms", at(readmeEpoch, -time.Millisecond), zeroID, rangeErr(readmeEpoch - 1)},
	{"epoch - 1ms - 1ns", at(readmeEpoch, -time.Millisecond-time.Nanosecond), zeroID, rangeErr(readmeEpoch - 2)},
	{"Unix epoch", time.Unix(0, 0), zeroID, rangeErr(0)},
	{"Unix epoch - 1ns", time.Unix(0, -1), zeroID, rangeErr(-1)},
	{"zero time.Time", time.Time{}, zeroID, rangeErr(-62135596800000)},

	{"last ms but one (.207Z)", at(readmeMaxTS-1, 0), first(readmeMaxTS - 1), last(readmeMaxTS - 1)},
	{".207Z + 1ns", at(readmeMaxTS-1, time.Nanosecond), first(readmeMaxTS), last(readmeMaxTS - 1)},
	{"max - 1µs", at(readmeMaxTS, -time.Microsecond), first(readmeMaxTS), last(readmeMaxTS - 1)},
	{"max - 1ns", at(readmeMaxTS, -time.Nanosecond), first(readmeMaxTS), last(readmeMaxTS - 1)},
	{"max (.208Z)", at(readmeMaxTS, 0), first(readmeMaxTS), largest},
	{"max + 1ns", at(readmeMaxTS, time.Nanosecond), rangeErr(readmeMaxTS + 1), largest},
	{"max + 1µs", at(readmeMaxTS, time.Microsecond), rangeErr(readmeMaxTS + 1), largest},
	{"max + 1ms - 1ns", at(readmeMaxTS, time.Millisecond-time.Nanosecond), rangeErr(readmeMaxTS + 1), largest},
	{"max + 1ms (.209Z)", at(readmeMaxTS, time.Millisecond), rangeErr(readmeMaxTS + 1), largest},
	{"max + 1ms + 1ns", at(readmeMaxTS, time.Millisecond+time.Nanosecond), rangeErr(readmeMaxTS + 2), largest},
	{"year 9999", time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), rangeErr(253402300800000), largest},

	// The int64 range of milliseconds ends at 9223372036854775807 and
	// -9223372036854775808 ms; beyond, the errors name the end.
	{"last int64 ms", time.Unix(math.MaxInt64/1000, 807_000_000), rangeErr(math.MaxInt64), largest},
	{"last int64 ms + 1ns", time.Unix(math.MaxInt64/1000, 807_000_001), rangeErr(math.MaxInt64), largest},
	{"past the int64 ms", time.Unix(math.MaxInt64/1000, 808_000_000), rangeErr(math.MaxInt64), largest},
	{"far future", time.Unix(1<<62, 0), rangeErr(math.MaxInt64), largest},
	{"first int64 ms", time.Unix(-9223372036854776, 192_000_000), zeroID, rangeErr(math.MinInt64)},
	{"first int64 ms + 1ns", time.Unix(-9223372036854776, 192_000_001), zeroID, rangeErr(math.MinInt64)},
	{"first int64 ms + 1ms", time.Unix(-9223372036854776, 193_000_000), zeroID, rangeErr(math.MinInt64 + 1)},
	{"before the int64 ms", time.Unix(-9223372036854776, 191_999_999), zeroID, rangeErr(math.MinInt64)},
	{"far past", time.Unix(-1<<62, 0), zeroID, rangeErr(math.MinInt64)},
}

// checkRange fails unless got, err is the answer want.
func checkRange(t *testing.T, call string, got ID, err error, want rangeAnswer) {
	t.Helper()
	if !want.err {
		if err != nil || got != want.id {
			t.Errorf("%s = %d, %v; want %s", call, got, err, want)
		}
		return
	}
	var re *RangeError
	if got != 0 || !errors.As(err, &re) || !errors.Is(err, ErrOutOfRange) ||
		*re != (RangeError{Field: FieldTimestamp, Value: want.errMS, Min: readmeEpoch, Max: readmeMaxTS}) {
		t.Errorf("%s = %d, %v; want 0 and %s in [%d, %d]", call, got, err, want, int64(readmeEpoch), int64(readmeMaxTS))
	}
}

func TestFirstIDLastID(t *testing.T) {
	for _, tc := range rangeCases {
		t.Run(tc.name, func(t *testing.T) {
			ts := tc.t.Format(time.RFC3339Nano)
			got, err := FirstID(tc.t)
			checkRange(t, "FirstID("+ts+")", got, err, tc.first)
			got, err = Twitter().FirstID(tc.t)
			checkRange(t, "Twitter.FirstID("+ts+")", got, err, tc.first)
			got, err = LastID(tc.t)
			checkRange(t, "LastID("+ts+")", got, err, tc.last)
			got, err = Twitter().LastID(tc.t)
			checkRange(t, "Twitter.LastID("+ts+")", got, err, tc.last)

			// The table and the oracle the fuzz test uses agree.
			if o := oracleFirstID(tc.t); o != tc.first {
				t.Errorf("oracleFirstID(%s) = %s, table says %s", ts, o, tc.first)
			}
			if o := oracleLastID(tc.t); o != tc.last {
				t.Errorf("oracleLastID(%s) = %s, table says %s", ts, o, tc.last)
			}
		})
	}
}

// TestRangeErrorMessages pins the messages, which are the SQL functions'
// word for word (internal/verify checks that against PostgreSQL).
func TestRangeErrorMessages(t *testing.T) {
	const rng = " out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"
	_, err := FirstID(at(readmeMaxTS, time.Microsecond))
	if want := "timestamp 3487858230209" + rng; err == nil || err.Error() != want {
		t.Errorf("FirstID(max + 1µs) error = %v, want %q", err, want)
	}
	_, err = LastID(at(readmeEpoch, -time.Microsecond))
	if want := "timestamp 1288834974656" + rng; err == nil || err.Error() != want {
		t.Errorf("LastID(epoch - 1µs) error = %v, want %q", err, want)
	}
}

// TestFirstIDLastIDOtherLayout checks a layout with another epoch and
// shift against its own formula.
func TestFirstIDLastIDOtherLayout(t *testing.T) {
	l, err := NewLayout(0, 43, 4, 4, 12) // 20 low bits, 2^43-1 ms from 1970
	if err != nil {
		t.Fatal(err)
	}
	const maxMS = 1<<43 - 1
	for _, tc := range []struct {
		t           time.Time
		first, last rangeAnswer
	}{
		{time.Unix(0, 0), rangeAnswer{id: 0}, rangeAnswer{id: 1<<20 - 1}},
		{time.Unix(0, -1), rangeAnswer{id: 0}, rangeAnswer{err: true, errMS: -1}},
		{time.Unix(1, 1), rangeAnswer{id: 1001 << 20}, rangeAnswer{id: 1000<<20 | (1<<20 - 1)}},
		{time.UnixMilli(maxMS), rangeAnswer{id: maxMS << 20}, rangeAnswer{id: readmeMaxID}},
		{time.UnixMilli(maxMS).Add(1), rangeAnswer{err: true, errMS: maxMS + 1}, rangeAnswer{id: readmeMaxID}},
	} {
		got, err := l.FirstID(tc.t)
		if re := (*RangeError)(nil); tc.first.err {
			if !errors.As(err, &re) || re.Value != tc.first.errMS || re.Min != 0 || re.Max != maxMS {
				t.Errorf("FirstID(%s) = %d, %v; want %s", tc.t, got, err, tc.first)
			}
		} else if err != nil || got != tc.first.id {
			t.Errorf("FirstID(%s) = %d, %v; want %s", tc.t, got, err, tc.first)
		}
		got, err = l.LastID(tc.t)
		if re := (*RangeError)(nil); tc.last.err {
			if !errors.As(err, &re) || re.Value != tc.last.errMS || re.Min != 0 || re.Max != maxMS {
				t.Errorf("LastID(%s) = %d, %v; want %s", tc.t, got, err, tc.last)
			}
		} else if err != nil || got != tc.last.id {
			t.Errorf("LastID(%s) = %d, %v; want %s", tc.t, got, err, tc.last)
		}
	}
}

// FuzzFirstIDLastID checks FirstID and LastID for any time (a millisecond
// and a nanosecond offset of up to ±2 ms) against two oracles: the SQL
// functions' steps computed with math/big (oracleFirstID, oracleLastID),
// and what the functions are for: FirstID(t) is dated at or after t and
// the ID before it before t; LastID(t) at or before t and the ID after it
// after t, with times from the README formula by division. Each input
// also checks a time scrambled from it (scrambledTime).
func FuzzFirstIDLastID(f *testing.F) {
	for _, c := range []struct{ ms, ns int64 }{
		{1288834975657, 0}, {1288834975657, 1}, {1288834975657, -1}, {1288834975657, 1000}, {1288834975657, -1000},
		{readmeEpoch, 0}, {readmeEpoch, -1}, {readmeEpoch, 1}, {readmeMaxTS, 0}, {readmeMaxTS, 1}, {readmeMaxTS, -1},
		{readmeMaxTS + 1, 0}, {readmeMaxTS - 1, 999_999}, {0, 0}, {math.MaxInt64, 0}, {math.MinInt64, 0},
		{1700000000000, 500_000},
	} {
		f.Add(c.ms, c.ns)
	}
	f.Fuzz(func(t *testing.T, ms, ns int64) {
		checkFirstLast(t, time.UnixMilli(ms).Add(time.Duration(ns%2_000_000)))
		checkFirstLast(t, scrambledTime(ms, ns))
	})
}

// scrambledTime derives from ms and ns a time that the fuzzing engine's
// small steps would not reach: half the time within 4 ms of the epoch or
// of the last millisecond, else anywhere between; on a whole millisecond,
// a nanosecond or a microsecond either side of one, or anywhere within a
// millisecond of it.
func scrambledTime(ms, ns int64) time.Time {
	a, b := scramble(uint64(ms)), scramble(uint64(ns))
	var at int64
	switch near := int64(a>>8%9) - 4; a % 4 {
	case 0:
		at = readmeEpoch + near
	case 1:
		at = readmeMaxTS + near
	default:
		at = readmeEpoch + int64(a>>8%(readmeMaxTS-readmeEpoch+1))
	}
	off := [...]int64{0, 1, -1, 1000, -1000, int64(b>>8%2_000_001) - 1_000_000}[b%6]
	return time.UnixMilli(at).Add(time.Duration(off))
}

func checkFirstLast(t *testing.T, tm time.Time) {
	t.Helper()
	ts := tm.Format(time.RFC3339Nano)
	id, err := FirstID(tm)
	checkRange(t, "FirstID("+ts+")", id, err, oracleFirstID(tm))
	if err == nil {
		if oracleTime(int64(id)).Before(tm) {
			t.Errorf("FirstID(%s) = %d, dated %s, before t", ts, id, oracleTime(int64(id)).Format(time.RFC3339Nano))
		}
		if id > 0 && !oracleTime(int64(id)-1).Before(tm) {
			t.Errorf("FirstID(%s) = %d, but %d is at or after t too", ts, id, id-1)
		}
	} else if !tm.After(time.UnixMilli(readmeMaxTS)) {
		t.Errorf("FirstID(%s) failed though an ID (%d) is at or after t", ts, int64(readmeMaxID))
	}
	id, err = LastID(tm)
	checkRange(t, "LastID("+ts+")", id, err, oracleLastID(tm))
	if err == nil {
		if oracleTime(int64(id)).After(tm) {
			t.Errorf("LastID(%s) = %d, dated %s, after t", ts, id, oracleTime(int64(id)).Format(time.RFC3339Nano))
		}
		if id < readmeMaxID && !oracleTime(int64(id)+1).After(tm) {
			t.Errorf("LastID(%s) = %d, but %d is at or before t too", ts, id, id+1)
		}
	} else if !tm.Before(time.UnixMilli(readmeEpoch)) {
		t.Errorf("LastID(%s) failed though an ID (0) is at or before t", ts)
	}
}

func BenchmarkFirstID(b *testing.B) {
	t := time.Date(2023, 11, 14, 22, 13, 30, 1000, time.UTC)
	for i := 0; i < b.N; i++ {
		id, err := FirstID(t)
		if err != nil {
			b.Fatal(err)
		}
		sinkID = id
	}
}

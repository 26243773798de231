package sfgen

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

const (
	minTS = TwitterEpoch
	maxTS = int64(3487858230208) // 2080-07-10T17:30:30.208Z
)

func TestTwitterLimits(t *testing.T) {
	l := Twitter()
	for _, tc := range []struct {
		f           Field
		bits, shift uint
		min, max    int64
	}{
		{FieldTimestamp, 41, 22, minTS, maxTS},
		{FieldDatacenter, 5, 17, 0, 31},
		{FieldMachine, 5, 12, 0, 31},
		{FieldSequence, 12, 0, 0, 4095},
		{FieldID, 63, 0, 0, math.MaxInt64},
	} {
		if got := l.Bits(tc.f); got != tc.bits {
			t.Errorf("Bits(%s) = %d, want %d", tc.f, got, tc.bits)
		}
		if got := l.Shift(tc.f); got != tc.shift {
			t.Errorf("Shift(%s) = %d, want %d", tc.f, got, tc.shift)
		}
		if got := l.Min(tc.f); got != tc.min {
			t.Errorf("Min(%s) = %d, want %d", tc.f, got, tc.min)
		}
		if got := l.Max(tc.f); got != tc.max {
			t.Errorf("Max(%s) = %d, want %d", tc.f, got, tc.max)
		}
	}
	if got, want := l.MaxTime().Format("2006-01-02T15:04:05.000Z"), "2080-07-10T17:30:30.208Z"; got != want {
		t.Errorf("MaxTime = %s, want %s", got, want)
	}
	if got, want := l.MinTime().Format("2006-01-02T15:04:05.000Z"), "2010-11-04T01:42:54.657Z"; got != want {
		t.Errorf("MinTime = %s, want %s", got, want)
	}
}

func TestCompose(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ts, dc, m, sq int64
		want          ID
		field         Field // of the error, when errField
		errField      bool
	}{
		{name: "worked example", ts: 1288834975657, dc: 1, m: 1, sq: 0, want: 4194439168},
		{name: "all zero", ts: minTS, want: 0},
		{name: "maximum", ts: maxTS, dc: 31, m: 31, sq: 4095, want: math.MaxInt64},
		{name: "sequence only", ts: minTS, sq: 4095, want: 4095},
		{name: "machine only", ts: minTS, m: 31, want: 31 << 12},
		{name: "datacenter only", ts: minTS, dc: 31, want: 31 << 17},
		{name: "one ms", ts: minTS + 1, want: 1 << 22},
		{name: "max timestamp", ts: maxTS, want: (1<<41 - 1) << 22},

		{name: "timestamp below epoch", ts: minTS - 1, errField: true, field: FieldTimestamp},
		{name: "timestamp zero", ts: 0, errField: true, field: FieldTimestamp},
		{name: "timestamp negative", ts: math.MinInt64, errField: true, field: FieldTimestamp},
		{name: "timestamp past 2080", ts: maxTS + 1, errField: true, field: FieldTimestamp},
		{name: "timestamp max int64", ts: math.MaxInt64, errField: true, field: FieldTimestamp},
		{name: "datacenter 32", ts: minTS, dc: 32, errField: true, field: FieldDatacenter},
		{name: "datacenter -1", ts: minTS, dc: -1, errField: true, field: FieldDatacenter},
		{name: "datacenter huge", ts: minTS, dc: math.MaxInt64, errField: true, field: FieldDatacenter},
		{name: "machine 32", ts: minTS, m: 32, errField: true, field: FieldMachine},
		{name: "machine -1", ts: minTS, m: -1, errField: true, field: FieldMachine},
		{name: "sequence 4096", ts: minTS, sq: 4096, errField: true, field: FieldSequence},
		{name: "sequence -1", ts: minTS, sq: -1, errField: true, field: FieldSequence},
		{name: "sequence min int64", ts: minTS, sq: math.MinInt64, errField: true, field: FieldSequence},
		{name: "first bad field wins", ts: 0, dc: 99, m: 99, sq: -1, errField: true, field: FieldTimestamp},
		{name: "datacenter before machine", ts: minTS, dc: 99, m: 99, errField: true, field: FieldDatacenter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Compose(tc.ts, tc.dc, tc.m, tc.sq)
			if !tc.errField {
				if err != nil || got != tc.want {
					t.Fatalf("Compose(%d, %d, %d, %d) = %d, %v; want %d, nil", tc.ts, tc.dc, tc.m, tc.sq, got, err, tc.want)
				}
				return
			}
			if got != 0 {
				t.Errorf("Compose returned %d alongside its error, want 0", got)
			}
			var re *RangeError
			if !errors.As(err, &re) || !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("Compose(%d, %d, %d, %d) error = %v, want a *RangeError wrapping ErrOutOfRange", tc.ts, tc.dc, tc.m, tc.sq, err)
			}
			if re.Field != tc.field || re.Min != Twitter().Min(tc.field) || re.Max != Twitter().Max(tc.field) {
				t.Errorf("RangeError = %+v, want field %s range [%d, %d]", re, tc.field, Twitter().Min(tc.field), Twitter().Max(tc.field))
			}
		})
	}
}

func TestRangeErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		ts, dc, m, sq int64
		want          string
	}{
		{minTS - 1, 0, 0, 0, "timestamp 1288834974656 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"},
		{minTS, 32, 0, 0, "datacenter 32 out of range [0, 31]"},
		{minTS, 0, -1, 0, "machine -1 out of range [0, 31]"},
		{minTS, 0, 0, 4096, "sequence 4096 out of range [0, 4095]"},
	} {
		_, err := Compose(tc.ts, tc.dc, tc.m, tc.sq)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Compose(%d, %d, %d, %d) error = %v, want %q", tc.ts, tc.dc, tc.m, tc.sq, err, tc.want)
		}
	}
	_, err := Decompose(-5)
	if want := "id -5 out of range [0, 9223372036854775807]"; err == nil || err.Error() != want {
		t.Errorf("Decompose(-5) error = %v, want %q", err, want)
	}
}

func TestDecompose(t *testing.T) {
	for _, tc := range []struct {
		id   ID
		want Parts
	}{
		{4194439168, Parts{1288834975657, 1, 1, 0}},
		{0, Parts{minTS, 0, 0, 0}},
		{math.MaxInt64, Parts{maxTS, 31, 31, 4095}},
		{1<<22 - 1, Parts{minTS, 31, 31, 4095}},
		{1 << 22, Parts{minTS + 1, 0, 0, 0}},
	} {
		got, err := Decompose(tc.id)
		if err != nil || got != tc.want {
			t.Errorf("Decompose(%d) = %+v, %v; want %+v, nil", tc.id, got, err, tc.want)
		}
	}
	for _, id := range []ID{-1, math.MinInt64} {
		_, err := Decompose(id)
		var re *RangeError
		if !errors.As(err, &re) || re.Field != FieldID || re.Value != int64(id) {
			t.Errorf("Decompose(%d) error = %v, want a *RangeError for id", id, err)
		}
	}
}

func TestNewLayout(t *testing.T) {
	l, err := NewLayout(TwitterEpoch, 41, 5, 5, 12)
	if err != nil || l != Twitter() {
		t.Fatalf("NewLayout(twitter) = %+v, %v; want Twitter", l, err)
	}
	for _, tc := range []struct {
		epoch          int64
		ts, dc, m, seq uint8
	}{
		{TwitterEpoch, 41, 5, 5, 11},  // 62 bits
		{TwitterEpoch, 42, 5, 5, 12},  // 64 bits
		{TwitterEpoch, 41, 0, 10, 12}, // empty field
		{-1, 41, 5, 5, 12},            // negative epoch
		{math.MaxInt64 - 10, 41, 5, 5, 12},
	} {
		if _, err := NewLayout(tc.epoch, tc.ts, tc.dc, tc.m, tc.seq); !errors.Is(err, ErrInvalidLayout) {
			t.Errorf("NewLayout(%d, %d, %d, %d, %d) error = %v, want ErrInvalidLayout", tc.epoch, tc.ts, tc.dc, tc.m, tc.seq, err)
		}
	}
	// Another valid layout composes and decomposes consistently.
	l, err = NewLayout(0, 43, 4, 4, 12)
	if err != nil {
		t.Fatal(err)
	}
	id, err := l.Compose(l.Max(FieldTimestamp), 15, 3, 7)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := l.Decompose(id); p != (Parts{l.Max(FieldTimestamp), 15, 3, 7}) {
		t.Errorf("round trip in custom layout = %+v", p)
	}
	if _, err := l.Compose(0, 16, 0, 0); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("datacenter 16 in a 4-bit layout: error = %v, want ErrOutOfRange", err)
	}
}

// checkRangeError fails unless err is a *RangeError wrapping ErrOutOfRange
// for field f and value v, with the README's range for f and the message
// RangeError documents.
func checkRangeError(t *testing.T, call string, err error, f Field, v int64) {
	t.Helper()
	lo, hi := int64(0), int64(readmeMaxID)
	for _, l := range readmeLimits {
		if l.f == f {
			lo, hi = l.lo, l.hi
		}
	}
	var re *RangeError
	if !errors.As(err, &re) || !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("%s error = %v (%T), want a *RangeError wrapping ErrOutOfRange", call, err, err)
	}
	if *re != (RangeError{Field: f, Value: v, Min: lo, Max: hi}) {
		t.Fatalf("%s error = %+v, want field %s, value %d, range [%d, %d]", call, *re, f, v, lo, hi)
	}
	want := fmt.Sprintf("%s %d out of range [%d, %d]", f, v, lo, hi)
	if f == FieldTimestamp {
		want += " (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"
	}
	if err.Error() != want {
		t.Fatalf("%s error = %q, want %q", call, err, want)
	}
}

// FuzzComposeDecompose checks Compose against the README formula computed
// with math/big (oracleCompose) for any four int64s: the same ID, or a
// *RangeError for the first field out of range with its value and range;
// then Decompose of the ID against the inputs. The fuzzing engine moves
// an integer by at most 100 at a time, and most int64s are out of range,
// so each input also checks a valid one derived from it by a bijective
// scramble (spread over each field's whole range).
func FuzzComposeDecompose(f *testing.F) {
	f.Add(int64(1288834975657), int64(1), int64(1), int64(0))
	f.Add(minTS, int64(0), int64(0), int64(0))
	f.Add(maxTS, int64(31), int64(31), int64(4095))
	f.Add(maxTS+1, int64(0), int64(0), int64(0))
	f.Add(minTS-1, int64(0), int64(0), int64(0))
	f.Add(minTS, int64(-1), int64(32), int64(4096))
	f.Add(minTS, int64(31), int64(32), int64(0))
	f.Add(minTS, int64(0), int64(0), int64(-1))
	f.Add(int64(1700000000000), int64(3), int64(7), int64(42))
	f.Add(int64(1700000000000), int64(16), int64(1), int64(2048))
	f.Add(int64(math.MinInt64), int64(math.MaxInt64), int64(0), int64(0))
	f.Add(int64(math.MaxInt64), int64(0), int64(0), int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, ts, dc, m, sq int64) {
		checkCompose(t, ts, dc, m, sq)
		checkCompose(t, readmeEpoch+int64(scramble(uint64(ts))%(readmeMaxTS-readmeEpoch+1)),
			int64(scramble(uint64(dc))%32), int64(scramble(uint64(m))%32), int64(scramble(uint64(sq))%4096))
	})
}

func checkCompose(t *testing.T, ts, dc, m, sq int64) {
	t.Helper()
	call := fmt.Sprintf("Compose(%d, %d, %d, %d)", ts, dc, m, sq)
	id, err := Compose(ts, dc, m, sq)
	want, bad, ok := oracleCompose(ts, dc, m, sq)
	if !ok {
		if id != 0 {
			t.Errorf("%s = %d alongside its error, want 0", call, id)
		}
		checkRangeError(t, call, err, bad, [4]int64{ts, dc, m, sq}[bad])
		return
	}
	if err != nil || int64(id) != want {
		t.Fatalf("%s = %d, %v; the README formula gives %d", call, id, err, want)
	}
	p, err := Decompose(id)
	if err != nil || p != (Parts{ts, dc, m, sq}) {
		t.Fatalf("Decompose(%d) = %+v, %v; want the inputs back", id, p, err)
	}
}

// FuzzDecomposeCompose checks Decompose against division and remainder
// (oracleDecompose) for any int64, field by field, and that a negative ID
// is a *RangeError for FieldID; then Compose of the fields against the ID.
// Each input also checks its scramble, whose bits are spread over every
// field: the engine's steps of at most 100 stay in the sequence bits.
func FuzzDecomposeCompose(f *testing.F) {
	f.Add(int64(4194439168))
	f.Add(int64(0))
	f.Add(int64(1<<22 - 1))
	f.Add(int64(1 << 22))
	f.Add(int64(31 << 17))
	f.Add(int64(31 << 12))
	f.Add(int64(1724551110456668202))
	f.Add(int64(math.MaxInt64))
	f.Add(int64(-1))
	f.Add(int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, n int64) {
		checkDecompose(t, n)
		checkDecompose(t, int64(scramble(uint64(n))))
	})
}

func checkDecompose(t *testing.T, n int64) {
	t.Helper()
	p, err := Decompose(ID(n))
	if n < 0 {
		if p != (Parts{}) {
			t.Errorf("Decompose(%d) = %+v alongside its error, want zero Parts", n, p)
		}
		checkRangeError(t, fmt.Sprintf("Decompose(%d)", n), err, FieldID, n)
		return
	}
	want := oracleDecompose(n)
	if err != nil {
		t.Fatalf("Decompose(%d) error = %v, want %+v", n, err, want)
	}
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"timestamp", p.Timestamp, want.Timestamp},
		{"datacenter", p.Datacenter, want.Datacenter},
		{"machine", p.Machine, want.Machine},
		{"sequence", p.Sequence, want.Sequence},
	} {
		if c.got != c.want {
			t.Errorf("Decompose(%d): %s = %d, want %d", n, c.name, c.got, c.want)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	id, err := Compose(p.Timestamp, p.Datacenter, p.Machine, p.Sequence)
	if err != nil || id != ID(n) {
		t.Fatalf("Compose(Decompose(%d)) = %d, %v", n, id, err)
	}
}

var sinkID ID
var sinkParts Parts

func BenchmarkCompose(b *testing.B) {
	ts := int64(1700000000000)
	for i := 0; i < b.N; i++ {
		id, err := Compose(ts, 1, 1, int64(i&4095))
		if err != nil {
			b.Fatal(err)
		}
		sinkID = id
	}
}

func BenchmarkDecompose(b *testing.B) {
	for i := 0; i < b.N; i++ {
		p, err := Decompose(ID(i) << 10)
		if err != nil {
			b.Fatal(err)
		}
		sinkParts = p
	}
}

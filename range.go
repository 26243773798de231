package sfgen

import (
	"math"
	"time"
)

// FirstID returns the smallest ID in the Twitter layout whose time is at
// or after t; it is Twitter().FirstID (see [Layout.FirstID]).
func FirstID(t time.Time) (ID, error) { return twitter.FirstID(t) }

// LastID returns the largest ID in the Twitter layout whose time is at or
// before t; it is Twitter().LastID (see [Layout.LastID]).
func LastID(t time.Time) (ID, error) { return twitter.LastID(t) }

// FirstID returns the smallest ID whose time is at or after t: the ID
// whose timestamp is t in Unix milliseconds rounded up (ceil) and whose
// datacenter, machine and sequence are 0. It is the Go twin of the SQL
// function snowflake_first_id(t timestamptz) and gives the same answer and
// the same error message for every time PostgreSQL can hold.
//
// With ⌈t⌉ the Unix millisecond at or after t (t itself when it is a whole
// millisecond, else the next one), and in the Twitter layout:
//
//	t <= l.MinTime() (2010-11-04T01:42:54.657Z)   0, nil: every ID is at or after t
//	l.MinTime() < t <= l.MaxTime()                (⌈t⌉ - l.Epoch()) << 22, nil
//	t > l.MaxTime() (2080-07-10T17:30:30.208Z)    0, a *RangeError for FieldTimestamp: no ID is at or after t
//
// The *RangeError's Value is ⌈t⌉ (2080-07-10T17:30:30.208001Z gives
// 3487858230209, as the SQL message does); for the times more than 292
// million years away whose milliseconds an int64 cannot hold, it is
// math.MaxInt64. PostgreSQL's 'infinity' and '-infinity', which a
// time.Time cannot express, are errors in SQL (SQLSTATE 22003, "timestamp
// infinity out of range [...]").
//
// PostgreSQL keeps microseconds; FirstID also rounds up a part below the
// microsecond, which a timestamptz parameter would lose first (pgx
// truncates it), so pass whole microseconds to compare the two.
//
// For times a and b, id >= FirstID(a) && id < FirstID(b) holds for exactly
// the IDs made at a <= time < b. The zero Layout returns ErrZeroLayout.
func (l Layout) FirstID(t time.Time) (ID, error) {
	switch {
	case l.IsZero():
		return 0, ErrZeroLayout
	case !t.After(l.MinTime()):
		return 0, nil
	case t.After(l.MaxTime()):
		return 0, l.rangeError(FieldTimestamp, ceilMillis(t))
	}
	return ID((ceilMillis(t) - l.epoch) << l.tsShift), nil
}

// LastID returns the largest ID whose time is at or before t: the ID whose
// timestamp is t in Unix milliseconds rounded down (floor) and whose
// datacenter, machine and sequence bits are all set. It is the Go twin of
// the SQL function snowflake_last_id(t timestamptz) and gives the same
// answer and the same error message for every time PostgreSQL can hold.
//
// With ⌊t⌋ the Unix millisecond at or before t, and in the Twitter layout:
//
//	t < l.MinTime() (2010-11-04T01:42:54.657Z)    0, a *RangeError for FieldTimestamp: no ID is at or before t
//	l.MinTime() <= t < l.MaxTime()                (⌊t⌋ - l.Epoch()) << 22 | (1<<22 - 1), nil
//	t >= l.MaxTime() (2080-07-10T17:30:30.208Z)   9223372036854775807 (the largest ID), nil
//
// The *RangeError's Value is ⌊t⌋ (2010-11-04T01:42:54.656999Z gives
// 1288834974656, as the SQL message does); for the times more than 292
// million years away whose milliseconds an int64 cannot hold, it is
// math.MinInt64. PostgreSQL's 'infinity' and '-infinity' are errors in
// SQL, as for [Layout.FirstID].
//
// For times a and b, id >= FirstID(a) && id <= LastID(b) holds for
// exactly the IDs made at a <= time <= b. The zero Layout returns
// ErrZeroLayout.
func (l Layout) LastID(t time.Time) (ID, error) {
	switch {
	case l.IsZero():
		return 0, ErrZeroLayout
	case !t.Before(l.MaxTime()):
		return ID(math.MaxInt64), nil
	case t.Before(l.MinTime()):
		return 0, l.rangeError(FieldTimestamp, floorMillis(t))
	}
	return ID((floorMillis(t)-l.epoch)<<l.tsShift | (1<<l.tsShift - 1)), nil
}

// floorMillis returns t in Unix milliseconds rounded down, saturated to
// the int64 range.
func floorMillis(t time.Time) int64 {
	sec, ms := t.Unix(), int64(t.Nanosecond()/1e6)
	if sec >= 0 {
		if sec > (math.MaxInt64-ms)/1000 {
			return math.MaxInt64
		}
		return sec*1000 + ms
	}
	// sec*1000 + ms is (sec+1)*1000 - (1000-ms), both terms at most 0.
	// Division truncates toward zero, so for a negative dividend it is
	// the ceiling: (sec+1)*1000 >= MinInt64+(1000-ms) exactly when
	// sec+1 >= (MinInt64+(1000-ms))/1000.
	if sec+1 < (math.MinInt64+(1000-ms))/1000 {
		return math.MinInt64
	}
	return (sec+1)*1000 - (1000 - ms)
}

// ceilMillis returns t in Unix milliseconds rounded up, saturated to the
// int64 range.
func ceilMillis(t time.Time) int64 {
	ms := floorMillis(t)
	if t.Nanosecond()%1e6 != 0 && ms != math.MaxInt64 {
		ms++
	}
	return ms
}

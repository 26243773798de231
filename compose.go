package sfgen

import "time"

// Parts are the four fields of a Snowflake ID, as Compose takes them and
// Decompose returns them.
type Parts struct {
	Timestamp  int64 // Unix milliseconds
	Datacenter int64 // datacenter number
	Machine    int64 // machine (worker) number
	Sequence   int64 // sequence within the millisecond
}

// Time returns p.Timestamp as a UTC time.
func (p Parts) Time() time.Time { return time.UnixMilli(p.Timestamp).UTC() }

// Compose returns the ID in the Twitter layout with the given timestamp
// (Unix milliseconds, 1288834974657 to 3487858230208), datacenter (0 to
// 31), machine (0 to 31) and sequence (0 to 4095). A value out of range
// returns a *RangeError for the first such field, in that order. It is
// Twitter().Compose.
func Compose(timestamp, datacenter, machine, sequence int64) (ID, error) {
	return twitter.Compose(timestamp, datacenter, machine, sequence)
}

// Decompose returns the fields of id in the Twitter layout. Every
// non-negative int64 is a valid ID; a negative id returns a *RangeError
// for FieldID. It is Twitter().Decompose.
func Decompose(id ID) (Parts, error) {
	return twitter.Decompose(id)
}

// Compose returns the ID with the given timestamp (Unix milliseconds),
// datacenter, machine and sequence. Each must lie within [l.Min(f),
// l.Max(f)] for its field f, or Compose returns a *RangeError for the
// first field, in that order, that does not. The zero Layout returns
// ErrZeroLayout.
func (l Layout) Compose(timestamp, datacenter, machine, sequence int64) (ID, error) {
	// One unsigned comparison checks both ends: a timestamp before the
	// epoch gives a negative delta, which is a huge uint64. No timestamp
	// wraps into range: the subtraction wraps only for timestamps below
	// math.MinInt64 + epoch, to at least 2^63 - epoch, and the epoch is
	// under 2^54. In the zero Layout deltaLimit is 0, so every timestamp
	// is refused, and rangeError says why.
	delta := timestamp - l.epoch
	switch {
	case uint64(delta) >= l.deltaLimit:
		return 0, l.rangeError(FieldTimestamp, timestamp)
	case uint64(datacenter) > l.maxDatacenter:
		return 0, l.rangeError(FieldDatacenter, datacenter)
	case uint64(machine) > l.maxMachine:
		return 0, l.rangeError(FieldMachine, machine)
	case uint64(sequence) > l.maxSequence:
		return 0, l.rangeError(FieldSequence, sequence)
	}
	return ID(delta<<l.tsShift | datacenter<<l.datacenterShift | machine<<l.sequenceBits | sequence), nil
}

// Decompose returns the fields of id. Every non-negative int64 is a valid
// ID; a negative id returns a *RangeError for FieldID, and the zero
// Layout ErrZeroLayout.
func (l Layout) Decompose(id ID) (Parts, error) {
	if uint64(id) >= l.idLimit { // negative, or the zero Layout
		return Parts{}, l.rangeError(FieldID, int64(id))
	}
	return Parts{
		Timestamp:  int64(id)>>l.tsShift + l.epoch,
		Datacenter: int64(uint64(id) >> l.datacenterShift & l.maxDatacenter),
		Machine:    int64(uint64(id) >> l.sequenceBits & l.maxMachine),
		Sequence:   int64(uint64(id) & l.maxSequence),
	}, nil
}

// rangeError returns the *RangeError for value v of field f, or
// ErrZeroLayout in the zero Layout, where every value is refused. It is
// kept out of line so that Compose and Decompose stay small.
//
//go:noinline
func (l Layout) rangeError(f Field, v int64) error {
	if l.IsZero() {
		return ErrZeroLayout
	}
	return &RangeError{Field: f, Value: v, Min: l.Min(f), Max: l.Max(f)}
}

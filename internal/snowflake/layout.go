package snowflake

import (
	"fmt"
	"time"
)

// A Field names one of the parts of a Snowflake ID.
type Field uint8

// The fields of a Snowflake ID, and FieldID for the ID as a whole.
const (
	FieldTimestamp  Field = iota // milliseconds since the Unix epoch
	FieldDatacenter              // datacenter number
	FieldMachine                 // machine (worker) number
	FieldSequence                // sequence number within one millisecond
	FieldID                      // the whole ID
)

var fieldNames = [...]string{"timestamp", "datacenter", "machine", "sequence", "id"}

// String returns the field's name as it appears in error messages:
// "timestamp", "datacenter", "machine", "sequence" or "id".
func (f Field) String() string {
	if int(f) < len(fieldNames) {
		return fieldNames[f]
	}
	return fmt.Sprintf("Field(%d)", uint8(f))
}

// A Layout describes how a Snowflake ID is built: the epoch, and the width
// in bits of the timestamp, datacenter, machine and sequence fields, which
// fill the 63 low bits of the ID from the most significant down. Shifts,
// masks and limits are all derived from these five numbers.
//
// The zero Layout is not valid; use [Twitter] or [NewLayout].
type Layout struct {
	epoch                                      int64
	timestampBits, datacenterBits, machineBits uint8
	sequenceBits                               uint8

	// Derived from the above by newLayout, so that Compose and Decompose
	// do no arithmetic on the layout itself.
	maxDelta                  int64  // largest timestamp offset from the epoch
	maxDatacenter, maxMachine uint64 // largest datacenter and machine
	maxSequence               uint64 // largest sequence
	tsShift, datacenterShift  uint8  // shifts of the timestamp and datacenter
}

// TwitterEpoch is the Twitter epoch, 2010-11-04T01:42:54.657Z, in Unix
// milliseconds.
const TwitterEpoch int64 = 1288834974657

// Twitter is the Twitter layout: epoch 2010-11-04T01:42:54.657Z, 41 bits of
// milliseconds, 5 bits of datacenter, 5 bits of machine and 12 bits of
// sequence.
var Twitter = twitter

var twitter = newLayout(TwitterEpoch, 41, 5, 5, 12)

// newLayout returns the layout with the given epoch and widths, with its
// derived fields set. It does not check them; NewLayout does.
func newLayout(epoch int64, timestampBits, datacenterBits, machineBits, sequenceBits uint8) Layout {
	return Layout{
		epoch:         epoch,
		timestampBits: timestampBits, datacenterBits: datacenterBits, machineBits: machineBits, sequenceBits: sequenceBits,
		maxDelta:        1<<timestampBits - 1,
		maxDatacenter:   1<<datacenterBits - 1,
		maxMachine:      1<<machineBits - 1,
		maxSequence:     1<<sequenceBits - 1,
		tsShift:         sequenceBits + machineBits + datacenterBits,
		datacenterShift: sequenceBits + machineBits,
	}
}

// NewLayout returns the layout with the given epoch (Unix milliseconds) and
// field widths. Every width must be at least 1 and the widths must add up
// to 63, and the latest timestamp the layout can hold must fit in an int64.
func NewLayout(epoch int64, timestampBits, datacenterBits, machineBits, sequenceBits uint8) (Layout, error) {
	l := newLayout(epoch, timestampBits, datacenterBits, machineBits, sequenceBits)
	for _, f := range []Field{FieldTimestamp, FieldDatacenter, FieldMachine, FieldSequence} {
		if l.Bits(f) == 0 {
			return Layout{}, fmt.Errorf("%w: %s field has no bits", ErrInvalidLayout, f)
		}
	}
	if sum := int(timestampBits) + int(datacenterBits) + int(machineBits) + int(sequenceBits); sum != 63 {
		return Layout{}, fmt.Errorf("%w: field widths add up to %d bits, want 63", ErrInvalidLayout, sum)
	}
	if epoch < 0 || epoch > maxInt64-(1<<timestampBits-1) {
		return Layout{}, fmt.Errorf("%w: epoch %d must be in [0, %d]", ErrInvalidLayout, epoch, maxInt64-(1<<timestampBits-1))
	}
	return l, nil
}

const maxInt64 = 1<<63 - 1

// Epoch returns the layout's epoch in Unix milliseconds.
func (l Layout) Epoch() int64 { return l.epoch }

// Bits returns the width of field f in bits; 63 for FieldID.
func (l Layout) Bits(f Field) uint {
	switch f {
	case FieldTimestamp:
		return uint(l.timestampBits)
	case FieldDatacenter:
		return uint(l.datacenterBits)
	case FieldMachine:
		return uint(l.machineBits)
	case FieldSequence:
		return uint(l.sequenceBits)
	case FieldID:
		return 63
	}
	return 0
}

// Shift returns how far field f is shifted left within the ID: 22, 17, 12
// and 0 for the timestamp, datacenter, machine and sequence in the Twitter
// layout.
func (l Layout) Shift(f Field) uint {
	switch f {
	case FieldTimestamp:
		return uint(l.sequenceBits) + uint(l.machineBits) + uint(l.datacenterBits)
	case FieldDatacenter:
		return uint(l.sequenceBits) + uint(l.machineBits)
	case FieldMachine:
		return uint(l.sequenceBits)
	}
	return 0
}

// Min returns the smallest value field f accepts: the epoch for
// FieldTimestamp, 0 for the others.
func (l Layout) Min(f Field) int64 {
	if f == FieldTimestamp {
		return l.epoch
	}
	return 0
}

// Max returns the largest value field f accepts. For FieldTimestamp that
// is the epoch plus 2^bits-1 milliseconds (3487858230208 in the Twitter
// layout); for the other fields it is 2^bits-1, and for FieldID 2^63-1.
func (l Layout) Max(f Field) int64 {
	m := int64(1)<<l.Bits(f) - 1
	if f == FieldTimestamp {
		m += l.epoch
	}
	return m
}

// MinTime and MaxTime return the earliest and latest instants the layout
// can hold, in UTC.
func (l Layout) MinTime() time.Time { return time.UnixMilli(l.Min(FieldTimestamp)).UTC() }

// MaxTime returns the latest instant the layout can hold, in UTC.
func (l Layout) MaxTime() time.Time { return time.UnixMilli(l.Max(FieldTimestamp)).UTC() }

// String describes the layout by its epoch and field widths, as in
// "epoch=1288834974657 timestamp=41 datacenter=5 machine=5 sequence=12".
// The SQL that sfgen generates returns the same text from
// snowflake_layout(), so a check can tell which layout a database has.
func (l Layout) String() string {
	return fmt.Sprintf("epoch=%d timestamp=%d datacenter=%d machine=%d sequence=%d",
		l.epoch, l.timestampBits, l.datacenterBits, l.machineBits, l.sequenceBits)
}

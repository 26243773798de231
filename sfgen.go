package sfgen

import (
	"time"

	"github.com/sfgen/sfgen/internal/snowflake"
)

// Parts are the four fields of a Snowflake ID, as Compose takes them and
// Decompose returns them.
type Parts struct {
	Timestamp  int64 // Unix milliseconds (not the offset from the epoch)
	Datacenter int64 // datacenter number
	Machine    int64 // machine (worker) number
	Sequence   int64 // sequence within the millisecond
}

// Time returns p.Timestamp as a UTC time.
func (p Parts) Time() time.Time { return snowflake.Parts(p).Time() }

// Compose returns the ID in the Twitter layout with the given timestamp
// (Unix milliseconds, 1288834974657 to 3487858230208), datacenter (0 to
// 31), machine (0 to 31) and sequence (0 to 4095). A value out of range
// returns a *RangeError for the first such field, in that order. It is
// Twitter().Compose.
func Compose(timestamp, datacenter, machine, sequence int64) (ID, error) {
	id, err := snowflake.Compose(timestamp, datacenter, machine, sequence)
	return ID(id), err
}

// Decompose returns the fields of id in the Twitter layout. Every
// non-negative int64 is a valid ID; a negative id returns a *RangeError
// for FieldID. It is Twitter().Decompose.
func Decompose(id ID) (Parts, error) {
	p, err := snowflake.Decompose(snowflake.ID(id))
	return Parts(p), err
}

// FirstID returns the smallest ID in the Twitter layout whose time is at
// or after t; it is Twitter().FirstID (see [Layout.FirstID]).
func FirstID(t time.Time) (ID, error) {
	id, err := snowflake.FirstID(t)
	return ID(id), err
}

// LastID returns the largest ID in the Twitter layout whose time is at or
// before t; it is Twitter().LastID (see [Layout.LastID]).
func LastID(t time.Time) (ID, error) {
	id, err := snowflake.LastID(t)
	return ID(id), err
}

// ErrOutOfRange is the sentinel wrapped by every [RangeError]: a value
// outside its field's range given to Compose, a negative ID given to
// Decompose or read by ParseID, Scan or UnmarshalJSON, or a generator
// whose clock is outside its layout's range.
var ErrOutOfRange = snowflake.ErrOutOfRange

// ErrSyntax is the sentinel wrapped by every [ParseError]: text that is
// not a decimal integer in the int64 range, given to ParseID,
// UnmarshalText, UnmarshalJSON or Scan.
var ErrSyntax = snowflake.ErrSyntax

// ErrInvalidLayout is the sentinel wrapped by every [LayoutError] and by
// ErrZeroLayout.
var ErrInvalidLayout = snowflake.ErrInvalidLayout

// ErrZeroLayout is returned by Compose, Decompose, FirstID, LastID,
// NewGenerator and MarshalText of the zero Layout, and by Next of the
// zero Generator. It wraps ErrInvalidLayout.
var ErrZeroLayout = snowflake.ErrZeroLayout

// ErrNullID is returned by ID.Scan for SQL NULL: a nullable column needs
// a NullID or a *ID.
var ErrNullID = snowflake.ErrNullID

// A RangeError reports a value outside the range its field accepts, as in
// "datacenter 32 out of range [0, 31]"; for a timestamp the message also
// gives the range as UTC times. The SQL that sfgen renders raises the same
// message (SQLSTATE 22003). It wraps ErrOutOfRange. Its fields:
//
//	Field Field // which field: FieldTimestamp, ..., or FieldID for the ID as a whole
//	Value int64 // the rejected value
//	Min   int64 // the smallest value the field accepts
//	Max   int64 // the largest value the field accepts
type RangeError = snowflake.RangeError

// A ParseError reports text that is not an ID, as in `id "abc" is not a
// decimal integer`. It wraps ErrSyntax. Its fields:
//
//	Input  string // the text given
//	Reason string // why it was rejected
type ParseError = snowflake.ParseError

// A LayoutError reports a layout that NewLayout or ParseLayout refuses,
// as in "invalid layout: sequence 32: want 1 to 31 bits: ..." or `invalid
// layout "epoch=0 timestamp=41": datacenter: missing`. It wraps
// ErrInvalidLayout. Its fields:
//
//	Spec   string // the text given to ParseLayout; "" from NewLayout
//	Part   string // "epoch"; a width, "timestamp", "datacenter", "machine" or "sequence";
//	              // "widths", their sum; or from ParseLayout a key as written, or "spec" for the whole text
//	Value  string // the value of Part as given, "" when there is none
//	Reason string // what is wrong and what is allowed
type LayoutError = snowflake.LayoutError

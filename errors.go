package sfgen

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrOutOfRange is the sentinel wrapped by every [RangeError]: a value
// outside its field's range given to Compose, a negative ID given to
// Decompose or read by ParseID, Scan or UnmarshalJSON, or a generator
// whose clock is outside its layout's range.
var ErrOutOfRange = errors.New("value out of range")

// ErrSyntax is the sentinel wrapped by every [ParseError]: text that is
// not a decimal integer in the int64 range, given to ParseID,
// UnmarshalText, UnmarshalJSON or Scan.
var ErrSyntax = errors.New("invalid syntax")

// ErrInvalidLayout is the sentinel wrapped by every [LayoutError] and by
// ErrZeroLayout.
var ErrInvalidLayout = errors.New("invalid layout")

// ErrZeroLayout is returned by Compose, Decompose, FirstID, LastID,
// NewGenerator and MarshalText of the zero Layout, and by Next of the
// zero Generator. It wraps ErrInvalidLayout.
var ErrZeroLayout = fmt.Errorf("%w: the zero Layout (use Twitter, Discord, NewLayout or ParseLayout)", ErrInvalidLayout)

// ErrNullID is returned by ID.Scan for SQL NULL: a nullable column needs
// a NullID or a *ID.
var ErrNullID = errors.New("cannot scan NULL into an ID; use a NullID or *ID for a nullable column")

// A RangeError reports a value outside the range its field accepts, as in
// "datacenter 32 out of range [0, 31]"; for a timestamp the message also
// gives the range as UTC times. The SQL that sfgen renders raises the same
// message (SQLSTATE 22003). It wraps ErrOutOfRange.
type RangeError struct {
	Field Field // which field
	Value int64 // the rejected value
	Min   int64 // smallest accepted value
	Max   int64 // largest accepted value
}

// Error returns, for example, "datacenter 32 out of range [0, 31]". For a
// timestamp the range is also given as UTC times.
func (e *RangeError) Error() string {
	return rangeMessage(e.Field, strconv.FormatInt(e.Value, 10), e.Min, e.Max)
}

// Unwrap returns ErrOutOfRange.
func (e *RangeError) Unwrap() error { return ErrOutOfRange }

// rangeMessage formats the message of a [RangeError] for field f whose
// value is written as value. The SQL that sfgen generates raises the same
// words, so that Go and PostgreSQL errors read alike.
func rangeMessage(f Field, value string, min, max int64) string {
	if f == FieldTimestamp {
		return fmt.Sprintf("%s %s out of range [%d, %d] (%s to %s)", f, value, min, max, formatMillis(min), formatMillis(max))
	}
	return fmt.Sprintf("%s %s out of range [%d, %d]", f, value, min, max)
}

// A ParseError reports text that is not an ID, as in `id "abc" is not a
// decimal integer`: ParseID's input, or the text or JSON given to
// UnmarshalText, UnmarshalJSON or Scan. It wraps ErrSyntax.
type ParseError struct {
	Input  string // the text given
	Reason string // why it was rejected
}

// Error returns, for example, `id "abc" is not a decimal integer`.
func (e *ParseError) Error() string {
	return fmt.Sprintf("id %q %s", e.Input, e.Reason)
}

// Unwrap returns ErrSyntax.
func (e *ParseError) Unwrap() error { return ErrSyntax }

// A LayoutError reports a layout that NewLayout or ParseLayout refuses,
// naming the part at fault, as in "invalid layout: sequence 32: want 1 to
// 31 bits: ..." or `invalid layout "epoch=0 timestamp=41": datacenter:
// missing`. It wraps ErrInvalidLayout.
type LayoutError struct {
	// Spec is the text given to ParseLayout; "" from NewLayout.
	Spec string
	// Part is what is at fault: "epoch"; a field's width, "timestamp",
	// "datacenter", "machine" or "sequence"; "widths", their sum; or,
	// from ParseLayout, a key as written, or "spec" for the text as a
	// whole.
	Part string
	// Value is the value of Part as given, "" when there is none (a
	// missing key, say).
	Value string
	// Reason says what is wrong and what is allowed.
	Reason string
}

// Error returns, for example, "invalid layout: sequence 32: want 1 to 31
// bits ..." or, from ParseLayout, `invalid layout "epoch=0 timestamp=41":
// datacenter: missing`.
func (e *LayoutError) Error() string {
	var b strings.Builder
	b.WriteString("invalid layout")
	if e.Spec != "" {
		b.WriteString(" ")
		b.WriteString(strconv.Quote(e.Spec))
	}
	b.WriteString(": ")
	b.WriteString(e.Part)
	if e.Value != "" {
		b.WriteString(" ")
		if isCanonicalInteger(e.Value) {
			b.WriteString(e.Value)
		} else {
			b.WriteString(strconv.Quote(e.Value))
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns ErrInvalidLayout.
func (e *LayoutError) Unwrap() error { return ErrInvalidLayout }

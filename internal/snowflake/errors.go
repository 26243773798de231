package snowflake

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrOutOfRange is the sentinel wrapped by every [RangeError]. Compose and
// Decompose (and their Layout methods) return it, as do ParseID and the
// generator, when a value falls outside its field's range.
var ErrOutOfRange = errors.New("value out of range")

// ErrSyntax is the sentinel wrapped by a [ParseError]: ParseID returns it
// when its input is not a decimal integer.
var ErrSyntax = errors.New("invalid syntax")

// ErrInvalidLayout is returned by NewLayout when the widths or epoch do not
// describe a usable layout, and by Layout.NewGenerator for the zero Layout.
var ErrInvalidLayout = errors.New("invalid layout")

// A RangeError reports a value outside the range its field accepts. It
// wraps ErrOutOfRange.
type RangeError struct {
	Field Field // which field
	Value int64 // the rejected value
	Min   int64 // smallest accepted value
	Max   int64 // largest accepted value
}

// Error returns, for example, "datacenter 32 out of range [0, 31]". For a
// timestamp the range is also given as UTC times.
func (e *RangeError) Error() string {
	return RangeMessage(e.Field, strconv.FormatInt(e.Value, 10), e.Min, e.Max)
}

// Unwrap returns ErrOutOfRange.
func (e *RangeError) Unwrap() error { return ErrOutOfRange }

// RangeMessage formats the message of a [RangeError] for field f whose
// value is written as value. The SQL that sfgen generates raises the same
// words, so that Go and PostgreSQL errors read alike.
func RangeMessage(f Field, value string, min, max int64) string {
	if f == FieldTimestamp {
		return fmt.Sprintf("%s %s out of range [%d, %d] (%s to %s)", f, value, min, max, formatMillis(min), formatMillis(max))
	}
	return fmt.Sprintf("%s %s out of range [%d, %d]", f, value, min, max)
}

// A ParseError reports an ID that ParseID cannot read. It wraps ErrSyntax.
type ParseError struct {
	Input  string // the text given
	Reason string // why it was rejected
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("id %q %s", e.Input, e.Reason)
}

// Unwrap returns ErrSyntax.
func (e *ParseError) Unwrap() error { return ErrSyntax }

package idkit

import (
	"fmt"
	"time"

	"github.com/sfgen/sfgen"
)

// ParseTime reads s as every input of sfgen may give a timestamp that is
// not a whole number of Unix milliseconds (the command line's
// --timestamp, serve's API and its page): an RFC 3339 time, with any
// offset and any fraction of a second, counted as its Unix millisecond
// rounded down. ok is false when s is not such a time.
func ParseTime(s string) (ms int64, ok bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, false
	}
	ms = t.UnixMilli() // toward zero
	if time.UnixMilli(ms).After(t) {
		ms--
	}
	return ms, true
}

// TimestampSyntaxMessage is the message for a timestamp s of layout l
// that is neither a whole number nor an RFC 3339 time (ParseTime): what
// every input of sfgen says.
func TimestampSyntaxMessage(l sfgen.Layout, s string) string {
	return fmt.Sprintf("%s %q is not a whole number or an RFC 3339 time; want an integer in [%d, %d] or a time from %s to %s",
		sfgen.FieldTimestamp, s, l.Min(sfgen.FieldTimestamp), l.Max(sfgen.FieldTimestamp), l.MinTime().Format(TimeFormat), l.MaxTime().Format(TimeFormat))
}

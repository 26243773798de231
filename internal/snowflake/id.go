package snowflake

import (
	"strconv"
	"strings"
	"time"
)

// An ID is a Snowflake ID: a non-negative int64, the type of a PostgreSQL
// bigint column.
//
// In JSON an ID is written as a decimal string, because JavaScript numbers
// lose precision above 2^53 and current IDs are near 2^61; it is read from
// either a string or a number.
type ID int64

// ParseID parses a decimal ID, from 0 to 9223372036854775807: an optional
// '+' or '-' sign, then one or more ASCII digits (leading zeros allowed),
// and nothing else. A negative number returns a *RangeError for FieldID
// (whose Value is -9223372036854775808 for a number below the int64
// range); anything else that is not a decimal integer in int64 range
// returns a *ParseError.
func ParseID(s string) (ID, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		reason := "is not a decimal integer"
		// strconv reports an overflow as soon as it meets one, without
		// reading on: "99999999999999999999x" is ErrRange, not ErrSyntax.
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange && isInteger(s) {
			if strings.HasPrefix(s, "-") {
				return 0, twitter.rangeError(FieldID, -1<<63)
			}
			reason = "is larger than 9223372036854775807"
		}
		return 0, &ParseError{Input: s, Reason: reason}
	}
	if n < 0 {
		return 0, twitter.rangeError(FieldID, n)
	}
	return ID(n), nil
}

// isInteger reports whether s is an optional sign and one or more ASCII
// digits, of any length.
func isInteger(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Int64 returns the ID as an int64.
func (id ID) Int64() int64 { return int64(id) }

// String returns the ID in decimal.
func (id ID) String() string { return strconv.FormatInt(int64(id), 10) }

// MarshalText returns the ID in decimal.
func (id ID) MarshalText() ([]byte, error) { return strconv.AppendInt(nil, int64(id), 10), nil }

// UnmarshalText parses a decimal ID as ParseID does.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// MarshalJSON returns the ID as a JSON string, such as "4194439168".
func (id ID) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 21)
	b = append(b, '"')
	b = strconv.AppendInt(b, int64(id), 10)
	return append(b, '"'), nil
}

// UnmarshalJSON reads an ID from a JSON string or number.
func (id *ID) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil // like encoding/json: null leaves the value as it is
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	return id.UnmarshalText([]byte(s))
}

func formatMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

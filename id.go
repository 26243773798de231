package sfgen

import (
	"bytes"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// An ID is a Snowflake ID: an int64 from 0 to 9223372036854775807, the
// type of a PostgreSQL bigint column. Every non-negative int64 is a valid
// ID in every layout; the layout says how to read its fields.
//
// A negative value is never an ID: writing one to a database, text or
// JSON (Value, MarshalText, MarshalJSON) and reading one (Scan,
// UnmarshalText, UnmarshalJSON) return a *RangeError for FieldID.
type ID int64

// ParseID parses a decimal ID, from 0 to 9223372036854775807: an optional
// '+' or '-' sign, then one or more ASCII digits (leading zeros allowed),
// and nothing else. A negative number returns a *RangeError for FieldID
// (whose Value is -9223372036854775808 for a number below the int64
// range); anything else that is not a decimal integer in the int64 range
// returns a *ParseError.
func ParseID(s string) (ID, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		reason := "is not a decimal integer"
		// strconv reports an overflow as soon as it meets one, without
		// reading on: "99999999999999999999x" is ErrRange, not ErrSyntax.
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange && isInteger(s) {
			if strings.HasPrefix(s, "-") {
				return 0, idRangeError(math.MinInt64)
			}
			reason = "is larger than 9223372036854775807"
		}
		return 0, &ParseError{Input: s, Reason: reason}
	}
	if n < 0 {
		return 0, idRangeError(n)
	}
	return ID(n), nil
}

// idRangeError is the *RangeError for a negative ID n.
func idRangeError(n int64) error {
	return &RangeError{Field: FieldID, Value: n, Min: 0, Max: math.MaxInt64}
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

// MarshalText implements encoding.TextMarshaler: the ID in decimal. A
// negative ID returns a *RangeError for FieldID.
func (id ID) MarshalText() ([]byte, error) {
	if id < 0 {
		return nil, idRangeError(int64(id))
	}
	return strconv.AppendInt(nil, int64(id), 10), nil
}

// UnmarshalText implements encoding.TextUnmarshaler: it parses a decimal
// ID as ParseID does. On error the ID is left as it was.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// MarshalJSON implements json.Marshaler: the ID as a JSON string, such as
// "4194439168". A negative ID returns a *RangeError for FieldID.
func (id ID) MarshalJSON() ([]byte, error) {
	if id < 0 {
		return nil, idRangeError(int64(id))
	}
	b := make([]byte, 0, 21)
	b = append(b, '"')
	b = strconv.AppendInt(b, int64(id), 10)
	return append(b, '"'), nil
}

// UnmarshalJSON implements json.Unmarshaler. It reads an ID from a JSON
// string, whose text (escapes decoded, so "\u0031" is 1) ParseID must
// accept, or from a JSON number that is a whole number from 0 to
// 9223372036854775807. A negative number returns a *RangeError for
// FieldID; a fraction (even 1.0), an exponent (even 1e3), a number above
// the int64 range or any other JSON value returns a *ParseError. JSON null
// leaves the ID as it is, as encoding/json does for other types; a NullID
// or a *ID tells null apart. On error the ID is left as it was.
func (id *ID) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		return nil
	case len(b) > 0 && b[0] == '"':
		if len(b) >= 2 && b[len(b)-1] == '"' && bytes.IndexByte(b, '\\') < 0 {
			// No escapes: the text between the quotes is the string.
			// (Quotes or control characters inside, which JSON does not
			// allow unescaped, are not digits, so ParseID refuses them.)
			return id.UnmarshalText(b[1 : len(b)-1])
		}
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return &ParseError{Input: string(b), Reason: "is not a valid JSON string"}
		}
		return id.UnmarshalText([]byte(s))
	}
	if reason := jsonNumberProblem(b); reason != "" {
		return &ParseError{Input: string(b), Reason: reason}
	}
	return id.UnmarshalText(b)
}

// jsonNumberProblem returns why b, not a JSON string or null, is not a
// JSON integer, or "" if it is one: -?(0|[1-9][0-9]*).
func jsonNumberProblem(b []byte) string {
	s := b
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	digits := 0
	for digits < len(s) && s[digits] >= '0' && s[digits] <= '9' {
		digits++
	}
	switch {
	case digits == 0:
		return "is not a JSON string or number"
	case s[0] == '0' && digits > 1:
		return "is not a JSON number: leading zero"
	case digits == len(s):
		return ""
	}
	rest := s[digits:]
	if rest[0] == '.' && isJSONFraction(rest) {
		return "has a fraction; want a whole number"
	}
	if (rest[0] == 'e' || rest[0] == 'E') && isJSONExponent(rest) {
		return "has an exponent; want the digits of a whole number"
	}
	return "is not a JSON string or number"
}

// isJSONFraction reports whether s is a JSON number's fraction, with any
// exponent after it.
func isJSONFraction(s []byte) bool {
	i := 1
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i > 1 && (i == len(s) || (s[i] == 'e' || s[i] == 'E') && isJSONExponent(s[i:]))
}

// isJSONExponent reports whether s is a JSON number's exponent.
func isJSONExponent(s []byte) bool {
	s = s[1:]
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if len(s) == 0 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Scan implements database/sql's Scanner, which pgx v5 uses too: it reads
// the ID from a bigint (or any integer column), given as an int64, or
// from its decimal text ([]byte or string) as ParseID reads it. A negative
// value returns a *RangeError for FieldID, SQL NULL returns ErrNullID,
// and any other type an error naming it. On error the ID is left as it
// was.
func (id *ID) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		if v < 0 {
			return idRangeError(v)
		}
		*id = ID(v)
		return nil
	case []byte:
		return id.UnmarshalText(v)
	case string:
		return id.UnmarshalText([]byte(v))
	case nil:
		return ErrNullID
	}
	return fmt.Errorf("cannot scan a %T into an ID; want a bigint", src)
}

// Value implements database/sql/driver's Valuer, which pgx v5 uses too:
// the ID as an int64, for a bigint parameter. A negative ID returns a
// *RangeError for FieldID rather than reach the database. A nil *ID is
// NULL.
func (id ID) Value() (driver.Value, error) {
	if id < 0 {
		return nil, idRangeError(int64(id))
	}
	return int64(id), nil
}

// A NullID is an ID that may be SQL NULL or JSON null, for a nullable
// bigint column, as sql.NullInt64 is for an int64: Valid is false for
// NULL. A *ID, nil for NULL, works as well with database/sql, pgx and
// encoding/json.
type NullID struct {
	ID    ID
	Valid bool // ID is not NULL
}

// Scan implements database/sql's Scanner: NULL gives a NullID with Valid
// false (and ID 0); anything else is read as ID.Scan reads it, and is an
// error where that is. On error n is left as it was.
func (n *NullID) Scan(src any) error {
	if src == nil {
		*n = NullID{}
		return nil
	}
	var id ID
	if err := id.Scan(src); err != nil {
		return err
	}
	*n = NullID{ID: id, Valid: true}
	return nil
}

// Value implements database/sql/driver's Valuer: nil (NULL) when Valid is
// false, else the ID as ID.Value gives it.
func (n NullID) Value() (driver.Value, error) {
	if !n.Valid {
		return nil, nil
	}
	return n.ID.Value()
}

// MarshalJSON implements json.Marshaler: null when Valid is false, else
// the ID as a JSON string.
func (n NullID) MarshalJSON() ([]byte, error) {
	if !n.Valid {
		return []byte("null"), nil
	}
	return n.ID.MarshalJSON()
}

// UnmarshalJSON implements json.Unmarshaler: null gives a NullID with
// Valid false, anything else is read as ID.UnmarshalJSON reads it. On
// error n is left as it was.
func (n *NullID) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = NullID{}
		return nil
	}
	var id ID
	if err := id.UnmarshalJSON(b); err != nil {
		return err
	}
	*n = NullID{ID: id, Valid: true}
	return nil
}

func formatMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// Time returns the time of id in the Twitter layout (Layout.Decompose
// reads the other layouts): its timestamp as a UTC time, to the
// millisecond. A negative id is no ID: Time returns the zero time.
func (id ID) Time() time.Time {
	p, err := Decompose(id)
	if err != nil {
		return time.Time{}
	}
	return p.Time()
}

// Datacenter returns the datacenter of id in the Twitter layout; -1 for
// a negative id.
func (id ID) Datacenter() int64 { return id.part(func(p Parts) int64 { return p.Datacenter }) }

// Machine returns the machine of id in the Twitter layout; -1 for a
// negative id.
func (id ID) Machine() int64 { return id.part(func(p Parts) int64 { return p.Machine }) }

// Sequence returns the sequence of id in the Twitter layout; -1 for a
// negative id.
func (id ID) Sequence() int64 { return id.part(func(p Parts) int64 { return p.Sequence }) }

func (id ID) part(f func(Parts) int64) int64 {
	p, err := Decompose(id)
	if err != nil {
		return -1
	}
	return f(p)
}

package sfgen

import (
	"database/sql/driver"
	"time"

	"github.com/sfgen/sfgen/internal/snowflake"
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
	id, err := snowflake.ParseID(s)
	return ID(id), err
}

// Int64 returns the ID as an int64.
func (id ID) Int64() int64 { return int64(id) }

// String returns the ID in decimal.
func (id ID) String() string { return snowflake.ID(id).String() }

// MarshalText implements encoding.TextMarshaler: the ID in decimal. A
// negative ID returns a *RangeError for FieldID.
func (id ID) MarshalText() ([]byte, error) { return snowflake.ID(id).MarshalText() }

// UnmarshalText implements encoding.TextUnmarshaler: it parses a decimal
// ID as ParseID does. On error the ID is left as it was.
func (id *ID) UnmarshalText(b []byte) error { return (*snowflake.ID)(id).UnmarshalText(b) }

// MarshalJSON implements json.Marshaler: the ID as a JSON string, such as
// "4194439168". A negative ID returns a *RangeError for FieldID.
func (id ID) MarshalJSON() ([]byte, error) { return snowflake.ID(id).MarshalJSON() }

// UnmarshalJSON implements json.Unmarshaler. It reads an ID from a JSON
// string, whose text (escapes decoded, so "\u0031" is 1) ParseID must
// accept, or from a JSON number that is a whole number from 0 to
// 9223372036854775807. A negative number returns a *RangeError for
// FieldID; a fraction (even 1.0), an exponent (even 1e3), a number above
// the int64 range or any other JSON value returns a *ParseError. JSON null
// leaves the ID as it is, as encoding/json does for other types; a NullID
// or a *ID tells null apart. On error the ID is left as it was.
func (id *ID) UnmarshalJSON(b []byte) error { return (*snowflake.ID)(id).UnmarshalJSON(b) }

// Scan implements database/sql's Scanner, which pgx v5 uses too: it reads
// the ID from a bigint (or any integer column), given as an int64, or
// from its decimal text ([]byte or string) as ParseID reads it. A negative
// value returns a *RangeError for FieldID, SQL NULL returns ErrNullID,
// and any other type an error naming it. On error the ID is left as it
// was.
func (id *ID) Scan(src any) error { return (*snowflake.ID)(id).Scan(src) }

// Value implements database/sql/driver's Valuer, which pgx v5 uses too:
// the ID as an int64, for a bigint parameter. A negative ID returns a
// *RangeError for FieldID rather than reach the database. A nil *ID is
// NULL.
func (id ID) Value() (driver.Value, error) { return snowflake.ID(id).Value() }

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
	var v snowflake.NullID
	if err := v.Scan(src); err != nil {
		return err
	}
	*n = NullID{ID: ID(v.ID), Valid: v.Valid}
	return nil
}

// Value implements database/sql/driver's Valuer: nil (NULL) when Valid is
// false, else the ID as ID.Value gives it.
func (n NullID) Value() (driver.Value, error) {
	return snowflake.NullID{ID: snowflake.ID(n.ID), Valid: n.Valid}.Value()
}

// MarshalJSON implements json.Marshaler: null when Valid is false, else
// the ID as a JSON string.
func (n NullID) MarshalJSON() ([]byte, error) {
	return snowflake.NullID{ID: snowflake.ID(n.ID), Valid: n.Valid}.MarshalJSON()
}

// UnmarshalJSON implements json.Unmarshaler: null gives a NullID with
// Valid false, anything else is read as ID.UnmarshalJSON reads it. On
// error n is left as it was.
func (n *NullID) UnmarshalJSON(b []byte) error {
	var v snowflake.NullID
	if err := v.UnmarshalJSON(b); err != nil {
		return err
	}
	*n = NullID{ID: ID(v.ID), Valid: v.Valid}
	return nil
}

// Time returns the time of id in the Twitter layout (Layout.Decompose
// reads the other layouts): its timestamp as a UTC time, to the
// millisecond. A negative id is no ID: Time returns the zero time.
func (id ID) Time() time.Time { return snowflake.ID(id).Time() }

// Datacenter returns the datacenter of id in the Twitter layout; -1 for
// a negative id.
func (id ID) Datacenter() int64 { return snowflake.ID(id).Datacenter() }

// Machine returns the machine of id in the Twitter layout; -1 for a
// negative id.
func (id ID) Machine() int64 { return snowflake.ID(id).Machine() }

// Sequence returns the sequence of id in the Twitter layout; -1 for a
// negative id.
func (id ID) Sequence() int64 { return snowflake.ID(id).Sequence() }

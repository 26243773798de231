// Package pgident checks and quotes the PostgreSQL names and string
// literals that sfgen writes into SQL: the schema sfgen installs into, the
// databases and roles its tests create, and the messages its templates
// embed.
//
// Everything sfgen renders from input goes through this package: a schema
// name is first checked by [ValidateSchema], so that it is one PostgreSQL
// keeps as typed, and then written with [Quote] anyway; text goes through
// [QuoteLiteral].
package pgident

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidSchema is wrapped by the *SchemaError that ValidateSchema
// returns for a schema name it refuses.
var ErrInvalidSchema = errors.New("invalid schema name")

// A SchemaError reports a schema name that ValidateSchema refuses, and why.
type SchemaError struct {
	Name   string // the name given
	Reason string // what is wrong with it
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("schema %q %s; want 1 to 63 lower-case letters, digits and underscores, not starting with a digit or pg_, and not a reserved keyword", e.Name, e.Reason)
}

// Unwrap returns ErrInvalidSchema.
func (e *SchemaError) Unwrap() error { return ErrInvalidSchema }

// MaxIdentifierLength is the longest identifier PostgreSQL keeps whole,
// in bytes (NAMEDATALEN - 1); it cuts longer ones.
const MaxIdentifierLength = 63

// ValidateSchema checks that name is usable as sfgen's schema: 1 to 63
// characters from a-z, 0-9 and _, not starting with a digit, and not
// starting with pg_ (reserved by PostgreSQL), and not a reserved keyword
// (such as user or select). These are exactly the names
// that PostgreSQL keeps as typed when unquoted, so the schema is the same
// whether a user writes it quoted or not. Generated SQL quotes it anyway.
func ValidateSchema(name string) error {
	switch {
	case name == "":
		return &SchemaError{name, "is empty"}
	case len(name) > MaxIdentifierLength:
		return &SchemaError{name, fmt.Sprintf("is %d bytes long", len(name))}
	case name[0] >= '0' && name[0] <= '9':
		return &SchemaError{name, "starts with a digit"}
	case strings.HasPrefix(name, "pg_"):
		return &SchemaError{name, "is reserved by PostgreSQL"}
	case reservedKeywords[name]:
		return &SchemaError{name, "is a reserved SQL keyword"}
	}
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return &SchemaError{name, fmt.Sprintf("has %q at byte %d", c, i)}
		}
	}
	return nil
}

// Quote returns name as a PostgreSQL quoted identifier: in double quotes,
// with any double quote doubled. It refuses nothing; a name with a NUL
// byte cannot be an identifier, and PostgreSQL rejects it.
func Quote(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// QuoteLiteral returns s as a PostgreSQL string literal. It refuses
// nothing: it doubles single quotes, and writes an E” literal with
// doubled backslashes when s has a backslash, so the result means s
// whatever standard_conforming_strings is.
func QuoteLiteral(s string) string {
	q := "'" + strings.ReplaceAll(s, "'", "''") + "'"
	if strings.Contains(s, `\`) {
		q = "E" + strings.ReplaceAll(q, `\`, `\\`)
	}
	return q
}

// reservedKeywords are the reserved keywords (pg_get_keywords()
// categories R and T) of PostgreSQL 15 to 18 (16 added system_user),
// which cannot name a schema without quotes. goose writes its version
// table's name unquoted, so sfgen refuses them.
var reservedKeywords = map[string]bool{
	"all": true, "analyse": true, "analyze": true, "and": true, "any": true,
	"array": true, "as": true, "asc": true, "asymmetric": true,
	"authorization": true, "binary": true, "both": true, "case": true,
	"cast": true, "check": true, "collate": true, "collation": true,
	"column": true, "concurrently": true, "constraint": true, "create": true,
	"cross": true, "current_catalog": true, "current_date": true,
	"current_role": true, "current_schema": true, "current_time": true,
	"current_timestamp": true, "current_user": true, "default": true,
	"deferrable": true, "desc": true, "distinct": true, "do": true,
	"else": true, "end": true, "except": true, "false": true, "fetch": true,
	"for": true, "foreign": true, "freeze": true, "from": true, "full": true,
	"grant": true, "group": true, "having": true, "ilike": true, "in": true,
	"initially": true, "inner": true, "intersect": true, "into": true,
	"is": true, "isnull": true, "join": true, "lateral": true,
	"leading": true, "left": true, "like": true, "limit": true,
	"localtime": true, "localtimestamp": true, "natural": true, "not": true,
	"notnull": true, "null": true, "offset": true, "on": true, "only": true,
	"or": true, "order": true, "outer": true, "overlaps": true,
	"placing": true, "primary": true, "references": true, "returning": true,
	"right": true, "select": true, "session_user": true, "similar": true,
	"some": true, "symmetric": true, "system_user": true, "table": true, "tablesample": true,
	"then": true, "to": true, "trailing": true, "true": true, "union": true,
	"unique": true, "user": true, "using": true, "variadic": true,
	"verbose": true, "when": true, "where": true, "window": true,
	"with": true,
}

package catalog

import (
	"github.com/sfgen/sfgen/internal/pgident"
)

// A Schema is the name of a schema sfgen works in, checked once by
// [ParseSchema] and quoted in one place ([Schema.Quoted]). The zero Schema
// names no schema.
type Schema struct{ name string }

// Public is the schema sfgen works in when none is given.
var Public = Schema{"public"}

// ParseSchema returns the schema called name. "" means [Public], the one
// place where that rule is made; any other name must pass
// pgident.ValidateSchema, whose *pgident.SchemaError (wrapping
// pgident.ErrInvalidSchema) it returns otherwise.
func ParseSchema(name string) (Schema, error) {
	if name == "" {
		return Public, nil
	}
	if err := pgident.ValidateSchema(name); err != nil {
		return Schema{}, err
	}
	return Schema{name}, nil
}

// Name returns the schema's name as written, unquoted.
func (s Schema) Name() string { return s.name }

// String returns the schema's name, as messages show it.
func (s Schema) String() string { return s.name }

// Quoted returns the name as an SQL identifier, in double quotes.
func (s Schema) Quoted() string { return pgident.Quote(s.name) }

// IsZero reports whether s names no schema.
func (s Schema) IsZero() bool { return s.name == "" }

// Func returns the argument to_regprocedure takes for the function of
// this schema with signature sig, such as `"ids".snowflake_layout()`.
func (s Schema) Func(sig string) string { return s.Quoted() + "." + sig }

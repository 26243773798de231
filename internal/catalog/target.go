package catalog

import (
	"fmt"

	snowflake "github.com/sfgen/sfgen"
)

// A Target is what a command or call works on: one schema, and the layout
// of the IDs sfgen's functions there compose. Only [NewTarget] makes one,
// so every Target but the zero one has a valid schema and a layout that is
// not the zero Layout.
type Target struct {
	schema Schema
	layout snowflake.Layout
}

// NewTarget returns the target of layout l in the schema called schema
// ("" means [Public], as in [ParseSchema]). The zero Layout is an error
// wrapping snowflake.ErrZeroLayout: it never stands for Twitter's.
func NewTarget(schema string, l snowflake.Layout) (Target, error) {
	s, err := ParseSchema(schema)
	if err != nil {
		return Target{}, err
	}
	if l.IsZero() {
		return Target{}, fmt.Errorf("target schema %s: %w", s, snowflake.ErrZeroLayout)
	}
	return Target{schema: s, layout: l}, nil
}

// Schema returns the target's schema.
func (t Target) Schema() Schema { return t.schema }

// Layout returns the target's layout.
func (t Target) Layout() snowflake.Layout { return t.layout }

// IsZero reports whether t is the zero Target, which targets nothing.
func (t Target) IsZero() bool { return t.schema.IsZero() }

// String returns "schema (layout)", as messages show a target.
func (t Target) String() string { return fmt.Sprintf("%s (%s)", t.schema, t.layout) }

package catalog_test

import (
	"errors"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgident"
)

func TestParseSchema(t *testing.T) {
	for _, tc := range []struct {
		in, name, quoted string
		err              error
	}{
		{"", "public", `"public"`, nil},
		{"public", "public", `"public"`, nil},
		{"ids_2", "ids_2", `"ids_2"`, nil},
		{"Ids", "", "", pgident.ErrInvalidSchema},
		{"pg_ids", "", "", pgident.ErrInvalidSchema},
		{"select", "", "", pgident.ErrInvalidSchema},
		{`a"b`, "", "", pgident.ErrInvalidSchema},
	} {
		s, err := catalog.ParseSchema(tc.in)
		if !errors.Is(err, tc.err) || s.Name() != tc.name || (err == nil && s.Quoted() != tc.quoted) {
			t.Errorf("ParseSchema(%q) = %q (%s), %v; want %q (%s), %v", tc.in, s.Name(), s.Quoted(), err, tc.name, tc.quoted, tc.err)
		}
		if err != nil && !s.IsZero() {
			t.Errorf("ParseSchema(%q) refused, but returned a schema %q", tc.in, s.Name())
		}
	}
}

func TestNewTarget(t *testing.T) {
	tg, err := catalog.NewTarget("", snowflake.Discord())
	if err != nil || tg.Schema() != catalog.Public || tg.Layout() != snowflake.Discord() || tg.IsZero() {
		t.Errorf(`NewTarget("", Discord) = %v, %v; want public, Discord`, tg, err)
	}
	if tg, err := catalog.NewTarget("ids", snowflake.Layout{}); !errors.Is(err, snowflake.ErrZeroLayout) || !tg.IsZero() {
		t.Errorf("NewTarget with the zero Layout = %v, %v; want the zero Target and ErrZeroLayout", tg, err)
	}
	if tg, err := catalog.NewTarget("Bad", snowflake.Twitter()); !errors.Is(err, pgident.ErrInvalidSchema) || !tg.IsZero() {
		t.Errorf("NewTarget of a bad schema = %v, %v; want the zero Target and ErrInvalidSchema", tg, err)
	}
	if !(catalog.Target{}).IsZero() {
		t.Error("the zero Target is not IsZero")
	}
}

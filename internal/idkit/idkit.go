// Package idkit holds what the sfgen command, its server and the SQL
// templates need of Snowflake IDs beyond package sfgen's public API: the
// preset names, the limits of sfgen's SQL, the binary breakdown, the JSON
// breakdown, the time input and the range message in SQL's words. It is
// built on that API alone.
package idkit

import (
	"slices"
	"strings"

	"github.com/sfgen/sfgen"
)

// PostgresMaxMillis is the last Unix millisecond PostgreSQL's timestamptz
// can hold, 294276-12-31T23:59:59.999Z. SQLMaxMillis, the limit layouts
// have, is much earlier.
const PostgresMaxMillis int64 = 9224318015999999

// SQLMaxMillis is the last Unix millisecond, 4253-05-31T22:20:37.928Z,
// that sfgen's SQL dates exactly, and so the latest time a layout may
// have: sfgen.NewLayout refuses a later one (TestLimits checks the two
// agree).
const SQLMaxMillis int64 = 72057594037928

// StateMaxMillis is the last clock reading, 2^47-1 Unix milliseconds
// (6429-10-17T02:45:55.327Z), for which snowflake_next_id()'s state, the
// clock's millisecond << sequence bits, fits a bigint in every layout
// sfgen.NewLayout accepts (at most 16 sequence bits).
const StateMaxMillis int64 = 1<<47 - 1

// PresetNames returns the names of the preset layouts, as
// sfgen.ParseLayout reads them: twitter (the default) and discord.
func PresetNames() []string { return []string{"twitter", "discord"} }

// LayoutByName returns the preset layout with the given name, "twitter"
// or "discord" (lower case, as PresetNames gives them).
func LayoutByName(name string) (sfgen.Layout, bool) {
	if !slices.Contains(PresetNames(), name) {
		return sfgen.Layout{}, false
	}
	l, err := sfgen.ParseLayout(name)
	return l, err == nil
}

// RangeMessage returns the message of a *sfgen.RangeError for field f
// whose value is written as value (an SQL expression, in the templates),
// with the range [min, max]: the words the SQL that sfgen renders raises,
// so that Go and PostgreSQL errors read alike. It is the RangeError's own
// message with value in place of its number.
func RangeMessage(f sfgen.Field, value string, min, max int64) string {
	msg := (&sfgen.RangeError{Field: f, Value: 0, Min: min, Max: max}).Error()
	prefix := f.String() + " 0 "
	if !strings.HasPrefix(msg, prefix) {
		panic("idkit: unexpected RangeError message " + msg)
	}
	return f.String() + " " + value + " " + msg[len(prefix):]
}

package serve

import (
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sfgen/sfgen/internal/snowflake"
)

// ErrInput is the sentinel wrapped by every InputError.
var ErrInput = errors.New("bad input")

// An InputError reports a value of the API or of the page that sfgen
// refuses, as the command line would refuse it: Field names the parameter
// ("timestamp", "datacenter", "machine", "sequence" or "id"), Value is its
// text as given, and Message is the command line's message for it, such as
// "datacenter 32 out of range [0, 31]". It wraps ErrInput, and
// snowflake.ErrOutOfRange or snowflake.ErrSyntax when the value is out of
// range or not a number.
type InputError struct {
	Field   string
	Value   string
	Message string
	Err     error // snowflake.ErrOutOfRange, snowflake.ErrSyntax or nil
}

func (e *InputError) Error() string { return e.Message }

// Unwrap returns ErrInput and, when there is one, the cause.
func (e *InputError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInput}
	}
	return []error{ErrInput, e.Err}
}

// composeFields are the parameters of a composition, in the order the
// command line checks its flags: the first bad one is the one reported.
var composeFields = []snowflake.Field{
	snowflake.FieldTimestamp, snowflake.FieldDatacenter, snowflake.FieldMachine, snowflake.FieldSequence,
}

// A composition is what compose reads: the four values, as given.
type composition struct {
	texts [4]string // in composeFields' order; "" for a field not given
}

// value reads the text s of field f in layout l as the command line reads
// its flag: a decimal integer (an optional sign, leading zeros allowed) in
// the field's range. With rfc3339 set, a timestamp may also be an RFC 3339
// time, which counts as its Unix millisecond (rounded down).
func value(l snowflake.Layout, f snowflake.Field, s string, rfc3339 bool) (int64, error) {
	lo, hi := l.Min(f), l.Max(f)
	times := rfc3339 && f == snowflake.FieldTimestamp
	var v big.Int
	if _, ok := v.SetString(s, 10); !ok {
		t, err := time.Parse(time.RFC3339Nano, s)
		if !times || err != nil {
			return 0, &InputError{f.String(), s, syntaxMessage(l, f, s, times), snowflake.ErrSyntax}
		}
		v.SetInt64(t.UnixMilli())
	}
	if v.Cmp(big.NewInt(lo)) < 0 || v.Cmp(big.NewInt(hi)) > 0 {
		return 0, &InputError{f.String(), s, snowflake.RangeMessage(f, v.String(), lo, hi), snowflake.ErrOutOfRange}
	}
	return v.Int64(), nil
}

// syntaxMessage is the message for the text s of field f that is not a
// number: the command line's, which the page words for times too when
// it takes them.
func syntaxMessage(l snowflake.Layout, f snowflake.Field, s string, times bool) string {
	lo, hi := l.Min(f), l.Max(f)
	if times {
		return fmt.Sprintf("%s %q is not a whole number or an RFC 3339 time; want an integer in [%d, %d] or a time from %s to %s",
			f, s, lo, hi, l.MinTime().Format(snowflake.TimeFormat), l.MaxTime().Format(snowflake.TimeFormat))
	}
	return fmt.Sprintf("%s %q is not a whole number; want an integer in [%d, %d]", f, s, lo, hi)
}

// compose returns the ID that c describes in layout l: a timestamp not
// given is now's, another field not given is 0.
func compose(l snowflake.Layout, c composition, now time.Time, rfc3339 bool) (snowflake.ID, error) {
	var vals [4]int64
	vals[0] = now.UnixMilli()
	for i, f := range composeFields {
		if c.texts[i] == "" {
			continue
		}
		v, err := value(l, f, c.texts[i], rfc3339)
		if err != nil {
			return 0, err
		}
		vals[i] = v
	}
	id, err := l.Compose(vals[0], vals[1], vals[2], vals[3])
	var re *snowflake.RangeError
	if errors.As(err, &re) {
		// A timestamp left to the clock, outside the layout's range.
		return 0, &InputError{re.Field.String(), "", err.Error(), err}
	}
	return id, err
}

// maxID is the largest ID, as text.
const maxID = "9223372036854775807"

// parseID reads the ID s as "sfgen decompose" reads its argument.
func parseID(s string) (snowflake.ID, error) {
	if s == "" {
		return 0, &InputError{"id", "", "missing ID; want a decimal integer in [0, " + maxID + "]", nil}
	}
	id, err := snowflake.ParseID(s)
	if err != nil {
		return 0, &InputError{"id", s, err.Error(), err}
	}
	return id, nil
}

// apiQuery reads the query of an API call that takes the parameters
// names: each at most once, no others. An empty value is returned as ""
// (the same as a parameter not given).
func apiQuery(path string, q url.Values, names ...string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	keys := slices.Sorted(maps.Keys(q))
	for _, k := range keys {
		vs := q[k]
		known := false
		for _, n := range names {
			known = known || k == n
		}
		switch {
		case !known:
			return nil, &InputError{k, strings.Join(vs, ","), fmt.Sprintf("unknown parameter %q; %s takes %s", k, path, wordList(names)), nil}
		case len(vs) > 1:
			return nil, &InputError{k, strings.Join(vs, ","), fmt.Sprintf("%s given %d times; give it once", k, len(vs)), nil}
		}
		out[k] = vs[0]
	}
	return out, nil
}

// wordList joins words as in "a, b and c".
func wordList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

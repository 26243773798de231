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

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/idkit"
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
// the field's range; a timestamp may also be an RFC 3339 time
// (idkit.ParseTime).
func value(l snowflake.Layout, f snowflake.Field, s string) (int64, error) {
	lo, hi := l.Min(f), l.Max(f)
	var v big.Int
	if _, ok := v.SetString(s, 10); !ok {
		ms, ok := idkit.ParseTime(s)
		if f != snowflake.FieldTimestamp || !ok {
			return 0, &InputError{f.String(), s, syntaxMessage(l, f, s), snowflake.ErrSyntax}
		}
		v.SetInt64(ms)
	}
	if v.Cmp(big.NewInt(lo)) < 0 || v.Cmp(big.NewInt(hi)) > 0 {
		return 0, &InputError{f.String(), s, idkit.RangeMessage(f, v.String(), lo, hi), snowflake.ErrOutOfRange}
	}
	return v.Int64(), nil
}

// syntaxMessage is the message for the text s of field f that is not a
// number: the command line's.
func syntaxMessage(l snowflake.Layout, f snowflake.Field, s string) string {
	if f == snowflake.FieldTimestamp {
		return idkit.TimestampSyntaxMessage(l, s)
	}
	return fmt.Sprintf("%s %q is not a whole number; want an integer in [%d, %d]", f, s, l.Min(f), l.Max(f))
}

// fieldErrors are the bad fields of a composition, one or more, in
// composeFields' order. Its text is the first's, the one the command
// line would report (it stops at the first flag it refuses); errors.As
// finds that first *InputError too. The page marks them all.
type fieldErrors []*InputError

func (e fieldErrors) Error() string { return e[0].Error() }

func (e fieldErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, ie := range e {
		out[i] = ie
	}
	return out
}

// compose returns the ID that c describes in layout l: a timestamp not
// given is now's, another field not given is 0. Bad fields are
// fieldErrors, every one of them.
func compose(l snowflake.Layout, c composition, now time.Time) (snowflake.ID, error) {
	var vals [4]int64
	vals[0] = now.UnixMilli()
	var bad fieldErrors
	for i, f := range composeFields {
		if c.texts[i] == "" {
			continue
		}
		v, err := value(l, f, c.texts[i])
		var ie *InputError
		if errors.As(err, &ie) {
			bad = append(bad, ie)
			continue
		}
		vals[i] = v
	}
	if len(bad) > 0 {
		return 0, bad
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

// checkForm checks the form parameter of the API's decompose.
func checkForm(form string) error {
	if form == "" {
		return nil
	}
	if err := idkit.CheckForm(form); err != nil {
		return &InputError{"form", form, err.Error(), err}
	}
	return nil
}

// parseID reads the ID s written in form (idkit.Forms; "" for decimal
// or base32) as "sfgen decompose" reads its argument.
func parseID(s, form string) (snowflake.ID, error) {
	if s == "" {
		return 0, &InputError{"id", "", idkit.MissingID, nil}
	}
	if err := checkForm(form); err != nil {
		return 0, err
	}
	id, err := idkit.ReadID(s, form)
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

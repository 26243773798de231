package idkit

import (
	"errors"
	"strconv"
	"testing"

	"github.com/sfgen/sfgen"
)

// TestLimits: SQLMaxMillis is the latest time sfgen.NewLayout lets a
// layout have, and the presets are what sfgen.ParseLayout reads by name.
func TestLimits(t *testing.T) {
	const ts = 46
	last := SQLMaxMillis - (int64(1)<<ts - 1)
	if _, err := sfgen.NewLayout(last, ts, 5, 5, 7); err != nil {
		t.Errorf("NewLayout with the latest time at SQLMaxMillis: %v", err)
	}
	if _, err := sfgen.NewLayout(last+1, ts, 5, 5, 7); !errors.Is(err, sfgen.ErrInvalidLayout) {
		t.Errorf("NewLayout with the latest time after SQLMaxMillis: %v; want ErrInvalidLayout", err)
	}
	for _, name := range PresetNames() {
		l, ok := LayoutByName(name)
		if !ok || l.Name() != name {
			t.Errorf("LayoutByName(%q) = %v, %v", name, l, ok)
		}
	}
	if _, ok := LayoutByName("Twitter"); ok {
		t.Error("LayoutByName(Twitter) found a layout; names are lower case")
	}
}

// TestRangeMessage: the message is sfgen.RangeError's with the value's
// text in place of its number.
func TestRangeMessage(t *testing.T) {
	l := sfgen.Twitter()
	for _, f := range []sfgen.Field{sfgen.FieldTimestamp, sfgen.FieldDatacenter, sfgen.FieldSequence} {
		e := &sfgen.RangeError{Field: f, Value: 4242, Min: l.Min(f), Max: l.Max(f)}
		if got := RangeMessage(f, strconv.Itoa(4242), l.Min(f), l.Max(f)); got != e.Error() {
			t.Errorf("RangeMessage(%s) = %q; want %q", f, got, e.Error())
		}
	}
}

package idkit

import "testing"

func TestParseTime(t *testing.T) {
	for _, tc := range []struct {
		in string
		ms int64
		ok bool
	}{
		{"2010-11-04T01:42:55.657Z", 1288834975657, true}, // the worked example
		{"2010-11-04T02:42:55.6579+01:00", 1288834975657, true},
		{"2010-11-04T01:42:55.657999999Z", 1288834975657, true}, // rounded down
		{"1969-12-31T23:59:59.9995Z", -1, true},                 // down, not toward zero
		{"1970-01-01T00:00:00Z", 0, true},
		{"2010-11-04 01:42:55Z", 0, false},
		{"1288834975657", 0, false},
		{"", 0, false},
	} {
		ms, ok := ParseTime(tc.in)
		if ms != tc.ms || ok != tc.ok {
			t.Errorf("ParseTime(%q) = %d, %v; want %d, %v", tc.in, ms, ok, tc.ms, tc.ok)
		}
	}
}

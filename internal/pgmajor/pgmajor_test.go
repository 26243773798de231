package pgmajor

import (
	"errors"
	"testing"
)

func TestCheckAndStatus(t *testing.T) {
	for _, tc := range []struct {
		num     int
		version string
		err     string
		status  string
	}{
		{140022, "14.22", "PostgreSQL 14 (server 14.22) is not supported: sfgen needs PostgreSQL 15 or later (15, 16, 17, 18 tested)", "not supported (sfgen needs PostgreSQL 15 or later)"},
		{90624, "9.6.24", "PostgreSQL 9 (server 9.6.24) is not supported: sfgen needs PostgreSQL 15 or later (15, 16, 17, 18 tested)", "not supported (sfgen needs PostgreSQL 15 or later)"},
		{150018, "15.18 (Debian 15.18-0+deb12u1)", "", "supported, tested in CI"},
		{180004, "18.4", "", "supported, tested in CI"},
		{190000, "19devel", "", "newer than any tested (15, 16, 17, 18): expected to work, not shown to"},
	} {
		err := Check(tc.num, tc.version)
		var e *Error
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Check(%d) = %v; want nil", tc.num, err)
		case tc.err != "" && (err == nil || err.Error() != tc.err || !errors.Is(err, ErrUnsupported) || !errors.As(err, &e) || e.Major != tc.num/10000):
			t.Errorf("Check(%d) = %v; want %q, an *Error wrapping ErrUnsupported", tc.num, err, tc.err)
		}
		if got := Status(tc.num); got != tc.status {
			t.Errorf("Status(%d) = %q; want %q", tc.num, got, tc.status)
		}
	}
}

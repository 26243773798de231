package sfgenpg

import "github.com/sfgen/sfgen/internal/leasegen"

// SetLeaseClock makes l's generator read its time from clock (Unix
// milliseconds): a process clock skewed from the database's, for tests.
// Call it before l's first Next. It is in a _test.go file, so it is no
// part of the package outside its tests.
func SetLeaseClock(l *Lease, clock func() int64) { leasegen.SetClockForTests(l.gen, clock) }

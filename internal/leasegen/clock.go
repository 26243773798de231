package leasegen

// SetClockForTests makes g read its time from clock, which returns Unix
// milliseconds, instead of the wall clock at construction plus the
// monotonic time since. It is for tests of other packages, such as the
// root package's lease tests, that need a generator whose clock is
// skewed from the database's: libfaketime does not move Go's clock, which
// Go reads without libc. Only _test.go files may call it
// (TestSetClockForTestsOnlyInTests checks the module), so no program has
// a run-time knob on its clock. Call it before g is used: the clock is
// not synchronized.
func SetClockForTests(g *Generator, clock func() int64) { g.clock = clock }

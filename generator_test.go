package sfgen

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A fakeClock is a settable clock in Unix milliseconds.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) now() int64   { return c.ms.Load() }
func (c *fakeClock) set(ms int64) { c.ms.Store(ms) }

// newFakeGenerator returns a generator for datacenter dc and machine m of
// layout l whose clock is c.
func newFakeGenerator(t testing.TB, l Layout, dc, m int64, c *fakeClock) *Generator {
	t.Helper()
	g, err := l.NewGenerator(dc, m)
	if err != nil {
		t.Fatalf("NewGenerator(%d, %d) error = %v", dc, m, err)
	}
	g.clock = c.now
	return g
}

// mustNext returns g.Next(), failing the test on an error.
func mustNext(t testing.TB, g *Generator) ID {
	t.Helper()
	id, err := g.Next()
	if err != nil {
		t.Fatalf("Next() error = %v", err)
	}
	return id
}

// nextAsync calls g.Next on another goroutine and returns a channel that
// receives its result.
func nextAsync(g *Generator) <-chan nextResult {
	ch := make(chan nextResult, 1)
	go func() {
		id, err := g.Next()
		ch <- nextResult{id, err}
	}()
	return ch
}

type nextResult struct {
	id  ID
	err error
}

// assertWaiting checks that Next, running as ch, has not returned yet. It
// can only pass wrongly (on a machine too slow to get there), never fail
// wrongly.
func assertWaiting(t *testing.T, ch <-chan nextResult) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("Next() = %d, %v before the clock moved; want it to wait", r.id, r.err)
	case <-time.After(20 * time.Millisecond):
	}
}

func receive(t *testing.T, ch <-chan nextResult) nextResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Next() did not return after the clock moved")
	}
	return nextResult{}
}

func TestNewGeneratorNode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dc, m    int64
		errField bool
		field    Field
	}{
		{name: "zero", dc: 0, m: 0},
		{name: "maximum", dc: 31, m: 31},
		{name: "one two", dc: 1, m: 2},
		{name: "datacenter 32", dc: 32, m: 0, errField: true, field: FieldDatacenter},
		{name: "datacenter -1", dc: -1, m: 0, errField: true, field: FieldDatacenter},
		{name: "machine 32", dc: 0, m: 32, errField: true, field: FieldMachine},
		{name: "machine -1", dc: 0, m: -1, errField: true, field: FieldMachine},
		{name: "datacenter before machine", dc: 99, m: 99, errField: true, field: FieldDatacenter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGenerator(tc.dc, tc.m)
			if !tc.errField {
				if err != nil {
					t.Fatalf("NewGenerator(%d, %d) error = %v", tc.dc, tc.m, err)
				}
				p, err := Decompose(mustNext(t, g))
				if err != nil || p.Datacenter != tc.dc || p.Machine != tc.m {
					t.Fatalf("Decompose(Next()) = %+v, %v; want datacenter %d, machine %d", p, err, tc.dc, tc.m)
				}
				return
			}
			if g != nil {
				t.Errorf("NewGenerator returned a generator alongside its error")
			}
			var re *RangeError
			if !errors.As(err, &re) || !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("NewGenerator(%d, %d) error = %v, want a *RangeError wrapping ErrOutOfRange", tc.dc, tc.m, err)
			}
			want := RangeError{Field: tc.field, Value: tc.dc, Min: 0, Max: 31}
			if tc.field == FieldMachine {
				want.Value = tc.m
			}
			if *re != want {
				t.Errorf("RangeError = %+v, want %+v", *re, want)
			}
		})
	}
	if _, err := (Layout{}).NewGenerator(0, 0); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("Layout{}.NewGenerator error = %v, want ErrInvalidLayout", err)
	}
	l, err := NewLayout(0, 43, 4, 4, 12)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.NewGenerator(16, 0); !errors.Is(err, ErrOutOfRange) || err.Error() != "datacenter 16 out of range [0, 15]" {
		t.Errorf("NewGenerator(16, 0) in a 4-bit layout: error = %v", err)
	}
}

// TestGeneratorConcurrent checks, across many goroutines, that IDs are
// unique, belong to the generator's node, increase within each goroutine,
// and increase globally: an ID is larger than every ID returned before the
// call that issued it began.
func TestGeneratorConcurrent(t *testing.T) {
	const goroutines, perGoroutine = 16, 20000
	g, err := NewGenerator(21, 9)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMilli()
	var (
		maxDone atomic.Int64 // the largest ID returned so far
		wg      sync.WaitGroup
		streams = make([][]ID, goroutines)
		errs    = make(chan error, goroutines)
	)
	for i := range goroutines {
		wg.Go(func() {
			ids := make([]ID, 0, perGoroutine)
			for range perGoroutine {
				floor := maxDone.Load()
				id, err := g.Next()
				if err != nil {
					errs <- err
					return
				}
				if int64(id) <= floor {
					errs <- fmt.Errorf("Next() = %d after a call that returned %d had finished", id, floor)
					return
				}
				for m := maxDone.Load(); int64(id) > m && !maxDone.CompareAndSwap(m, int64(id)); m = maxDone.Load() {
				}
				ids = append(ids, id)
			}
			streams[i] = ids
		})
	}
	wg.Wait()
	after := time.Now().UnixMilli()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var all []ID
	for i, ids := range streams {
		for j := 1; j < len(ids); j++ {
			if ids[j] <= ids[j-1] {
				t.Fatalf("goroutine %d: ID %d = %d after %d; want strictly increasing", i, j, ids[j], ids[j-1])
			}
		}
		all = append(all, ids...)
	}
	slices.Sort(all)
	if n := len(slices.Compact(slices.Clone(all))); n != goroutines*perGoroutine {
		t.Fatalf("%d distinct IDs of %d", n, goroutines*perGoroutine)
	}
	for _, id := range all {
		p, err := Decompose(id)
		if err != nil || p.Datacenter != 21 || p.Machine != 9 {
			t.Fatalf("Decompose(%d) = %+v, %v; want datacenter 21, machine 9", id, p, err)
		}
		// Loose bounds: the generator follows the monotonic clock, which
		// may drift from the wall clock by a little while the test runs.
		if p.Timestamp < before-1000 || p.Timestamp > after+1000 {
			t.Fatalf("ID %d has timestamp %d, want about [%d, %d]", id, p.Timestamp, before, after)
		}
	}
}

func TestGeneratorSequence(t *testing.T) {
	const t0 = int64(1700000000000)
	var c fakeClock
	c.set(t0)
	g := newFakeGenerator(t, Twitter(), 3, 4, &c)
	for seq := range int64(4096) {
		want, _ := Compose(t0, 3, 4, seq)
		if got := mustNext(t, g); got != want {
			t.Fatalf("ID %d at %d = %d, want %d", seq, t0, got, want)
		}
	}
	// The millisecond is full: Next waits for the clock.
	ch := nextAsync(g)
	assertWaiting(t, ch)
	c.set(t0 + 1)
	r := receive(t, ch)
	if want, _ := Compose(t0+1, 3, 4, 0); r.id != want || r.err != nil {
		t.Fatalf("Next() after a full millisecond = %d, %v; want %d (next ms, sequence 0)", r.id, r.err, want)
	}
	// A clock that moves on starts its millisecond at sequence 0.
	mustNext(t, g)
	c.set(t0 + 50)
	if got, want := mustNext(t, g), mustCompose(t, t0+50, 3, 4, 0); got != want {
		t.Fatalf("Next() after the clock moved on = %d, want %d", got, want)
	}
}

// TestGeneratorClockBackwards feeds the generator a clock that goes back.
// Its real clock is monotonic and cannot, but its state alone must keep the
// IDs unique and increasing whatever the clock says.
func TestGeneratorClockBackwards(t *testing.T) {
	const t0 = int64(1700000000000)
	var c fakeClock
	c.set(t0)
	g := newFakeGenerator(t, Twitter(), 0, 1, &c)
	last := mustNext(t, g)
	for _, back := range []int64{1, 1000, 3600_000} {
		c.set(t0 - back)
		for range 100 {
			id := mustNext(t, g)
			if id <= last {
				t.Fatalf("clock %d ms back: Next() = %d after %d", back, id, last)
			}
			if p, _ := Decompose(id); p.Timestamp != t0 {
				t.Fatalf("clock %d ms back: timestamp %d, want %d (the latest issued)", back, p.Timestamp, t0)
			}
			last = id
		}
	}
	// Using up the millisecond while the clock is behind waits for the
	// clock to pass it, as an ID ahead of the clock would be.
	for p, _ := Decompose(last); p.Sequence < 4095; p, _ = Decompose(last) {
		last = mustNext(t, g)
	}
	ch := nextAsync(g)
	assertWaiting(t, ch)
	c.set(t0)
	assertWaiting(t, ch)
	c.set(t0 + 1)
	if r := receive(t, ch); r.err != nil || r.id != mustCompose(t, t0+1, 0, 1, 0) {
		t.Fatalf("Next() = %d, %v; want the first ID of %d", r.id, r.err, t0+1)
	}
}

func TestGeneratorTimeRange(t *testing.T) {
	maxTS := Twitter().Max(FieldTimestamp)
	var c fakeClock
	c.set(maxTS)
	g := newFakeGenerator(t, Twitter(), 31, 31, &c)
	var last ID
	for range 4096 {
		last = mustNext(t, g)
	}
	if last != 1<<63-1 {
		t.Fatalf("last ID of the last millisecond = %d, want %d", last, int64(1<<63-1))
	}
	ch := nextAsync(g)
	assertWaiting(t, ch)
	c.set(maxTS + 1)
	r := receive(t, ch)
	checkTimestampError(t, r.id, r.err, maxTS+1)
	if want := "timestamp 3487858230209 out of range [1288834974657, 3487858230208] (2010-11-04T01:42:54.657Z to 2080-07-10T17:30:30.208Z)"; r.err.Error() != want {
		t.Errorf("error = %q, want %q", r.err, want)
	}

	for _, ms := range []int64{maxTS + 1, maxTS + 86400_000, TwitterEpoch - 1, 0} {
		c.set(ms)
		g := newFakeGenerator(t, Twitter(), 0, 0, &c)
		id, err := g.Next()
		checkTimestampError(t, id, err, ms)
	}
	// The first millisecond of the layout is fine.
	c.set(TwitterEpoch)
	if got := mustNext(t, newFakeGenerator(t, Twitter(), 0, 0, &c)); got != 0 {
		t.Errorf("first ID at the epoch = %d, want 0", got)
	}
}

func checkTimestampError(t *testing.T, id ID, err error, ms int64) {
	t.Helper()
	var re *RangeError
	if !errors.As(err, &re) || !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("clock %d: Next() = %d, %v; want a *RangeError wrapping ErrOutOfRange", ms, id, err)
	}
	if id != 0 || re.Field != FieldTimestamp || re.Value != ms || re.Min != TwitterEpoch || re.Max != Twitter().Max(FieldTimestamp) {
		t.Errorf("clock %d: Next() = %d, %+v; want 0 and a timestamp error for %d", ms, id, *re, ms)
	}
}

// TestGeneratorRealClock checks the timestamps of the real clock against
// the wall clock, loosely.
func TestGeneratorRealClock(t *testing.T) {
	before := time.Now().UnixMilli()
	g, err := NewGenerator(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	p, _ := Decompose(mustNext(t, g))
	after := time.Now().UnixMilli()
	if p.Timestamp < before+5 || p.Timestamp > after+1 {
		t.Errorf("timestamp %d, want within [%d, %d]", p.Timestamp, before+5, after)
	}
}

func TestGeneratorAllocs(t *testing.T) {
	g, err := NewGenerator(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(10000, func() { sinkID, _ = g.Next() }); n != 0 {
		t.Errorf("Next allocates %v times per call, want 0", n)
	}
}

func mustCompose(t testing.TB, ts, dc, m, seq int64) ID {
	t.Helper()
	id, err := Compose(ts, dc, m, seq)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// BenchmarkGeneratorNext measures a Twitter-layout generator, which can
// issue at most 4,096,000 IDs a second, from 1, 2 and 64 goroutines. It
// reports ids/s and limit-ratio, the fraction of that limit reached.
func BenchmarkGeneratorNext(b *testing.B) {
	benchmarkGenerator(b, Twitter())
}

// BenchmarkGeneratorNextUnlimited measures the cost of one ID with the
// layout's limit out of the way: 16 bits of sequence (the most a layout
// may have) allow 65,536,000 IDs a second, more than one node can issue.
// It reports ids/s only.
func BenchmarkGeneratorNextUnlimited(b *testing.B) {
	l, err := NewLayout(TwitterEpoch, 45, 1, 1, 16)
	if err != nil {
		b.Fatal(err)
	}
	benchmarkGenerator(b, l)
}

func benchmarkGenerator(b *testing.B, l Layout) {
	limit := float64(int64(1)<<l.Bits(FieldSequence)) * 1000 // IDs a second
	report := func(b *testing.B) {
		ids := float64(b.N) / b.Elapsed().Seconds()
		b.ReportMetric(ids, "ids/s")
		if limit < 1e7 {
			b.ReportMetric(ids/limit, "limit-ratio")
		}
	}
	newGen := func(b *testing.B) *Generator {
		g, err := l.NewGenerator(1, 1)
		if err != nil {
			b.Fatal(err)
		}
		return g
	}
	b.Run("goroutines=1", func(b *testing.B) {
		g := newGen(b)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := g.Next(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		report(b)
	})
	parallel := func(b *testing.B, procs, goroutines int) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		// RunParallel starts parallelism×GOMAXPROCS goroutines.
		b.SetParallelism((goroutines + procs - 1) / procs)
		g := newGen(b)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := g.Next(); err != nil {
					panic(err)
				}
			}
		})
		b.StopTimer()
		report(b)
	}
	b.Run("goroutines=2", func(b *testing.B) { parallel(b, 2, 2) })
	b.Run("goroutines=64", func(b *testing.B) { parallel(b, runtime.GOMAXPROCS(0), 64) })
}

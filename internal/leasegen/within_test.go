package leasegen

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sfgen/sfgen"
)

// TestGeneratorWithin: a leased node's generator dates its IDs from its
// floor on, carries on above the floor while the clock is behind it (one
// millisecond after another, without waiting), never dates an ID after its
// limit until SetLimit raises it, and from the floor on is a plain
// generator again.
func TestGeneratorWithin(t *testing.T) {
	l := mustLayout(1288834974657, 46, 7, 8, 2) // 4 IDs a millisecond
	var c fakeClock
	c.set(2_000_000_000_000)
	floor := c.now() + 1000 // the clock is a second behind
	g, err := New(l, 3, 4, floor, floor+2)
	if err != nil {
		t.Fatal(err)
	}
	g.clock = c.now
	want := func(ms, seq int64) sfgen.ID {
		id, err := l.Compose(ms, 3, 4, seq)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	// Three milliseconds' worth, floor to floor+2, with the clock standing still.
	for ms := floor; ms <= floor+2; ms++ {
		for seq := range int64(4) {
			if got := mustNext(t, g); got != want(ms, seq) {
				t.Fatalf("Next() = %d; want %d (ms %d, sequence %d)", got, want(ms, seq), ms, seq)
			}
		}
	}
	if _, err := g.Next(); !errors.Is(err, ErrBeyondLimit) {
		t.Fatalf("Next() past the limit: %v; want ErrBeyondLimit", err)
	}
	g.SetLimit(floor + 100)
	g.SetLimit(floor + 1) // lower: ignored
	if got := mustNext(t, g); got != want(floor+3, 0) {
		t.Fatalf("Next() after SetLimit = %d; want %d", got, want(floor+3, 0))
	}
	// The clock passes the floor: IDs follow it, and wait for it again.
	c.set(floor + 10)
	if got := mustNext(t, g); got != want(floor+10, 0) {
		t.Fatalf("Next() with the clock past the floor = %d; want %d", got, want(floor+10, 0))
	}
	for range 3 {
		mustNext(t, g)
	}
	ch := nextAsync(g)
	assertWaiting(t, ch)
	c.set(floor + 11)
	if r := <-ch; r.err != nil || r.id != want(floor+11, 0) {
		t.Fatalf("Next() after the wait = %d, %v; want %d", r.id, r.err, want(floor+11, 0))
	}
	// Out of range floors and limits.
	for _, tc := range []struct{ floor, limit int64 }{
		{l.Epoch() - 1, floor}, {floor, l.Max(sfgen.FieldTimestamp) + 1}, {floor, floor - 1},
	} {
		if _, err := New(l, 3, 4, tc.floor, tc.limit); !errors.Is(err, sfgen.ErrOutOfRange) {
			t.Errorf("New(floor %d, limit %d): %v; want ErrOutOfRange", tc.floor, tc.limit, err)
		}
	}
}

// TestGeneratorStop: after Stop, Next returns its error, and the time
// Stop returns is that of the latest ID any call returned, calls that
// were running at the time included.
func TestGeneratorStop(t *testing.T) {
	for range 20 {
		g, err := New(sfgen.Twitter(), 1, 1, sfgen.TwitterEpoch, sfgen.Twitter().Max(sfgen.FieldTimestamp))
		if err != nil {
			t.Fatal(err)
		}
		stopErr := errors.New("stopped")
		var mu sync.Mutex
		var ids []sfgen.ID
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 4 {
			wg.Go(func() {
				<-start
				for {
					id, err := g.Next()
					if err != nil {
						if !errors.Is(err, stopErr) {
							t.Error(err)
						}
						return
					}
					mu.Lock()
					ids = append(ids, id)
					mu.Unlock()
				}
			})
		}
		close(start)
		for {
			mu.Lock()
			n := len(ids)
			mu.Unlock()
			if n >= 1000 {
				break
			}
		}
		last := g.Stop(stopErr)
		wg.Wait()
		var max sfgen.ID
		for _, id := range ids {
			if id > max {
				max = id
			}
		}
		p, _ := sfgen.Twitter().Decompose(max)
		if last != p.Timestamp {
			t.Fatalf("Stop returned %d; the last sfgen.ID is dated %d", last, p.Timestamp)
		}
		if again := g.Stop(errors.New("other")); again != last {
			t.Fatalf("a second Stop returned %d, the first %d", again, last)
		}
		if _, err := g.Next(); !errors.Is(err, stopErr) {
			t.Fatalf("Next after Stop: %v; want the first Stop's error", err)
		}
	}
}

type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) now() int64   { return c.ms.Load() }
func (c *fakeClock) set(ms int64) { c.ms.Store(ms) }

func mustLayout(epoch int64, timestampBits, datacenterBits, machineBits, sequenceBits uint8) sfgen.Layout {
	l, err := sfgen.NewLayout(epoch, timestampBits, datacenterBits, machineBits, sequenceBits)
	if err != nil {
		panic(err)
	}
	return l
}

func mustNext(t testing.TB, g *Generator) sfgen.ID {
	t.Helper()
	id, err := g.Next()
	if err != nil {
		t.Fatal(err)
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
	id  sfgen.ID
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

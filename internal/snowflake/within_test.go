package snowflake

import (
	"errors"
	"sync"
	"testing"
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
	g, err := l.NewGeneratorWithin(3, 4, floor, floor+2)
	if err != nil {
		t.Fatal(err)
	}
	g.clock = c.now
	want := func(ms, seq int64) ID {
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
		{l.Epoch() - 1, floor}, {floor, l.Max(FieldTimestamp) + 1}, {floor, floor - 1},
	} {
		if _, err := l.NewGeneratorWithin(3, 4, tc.floor, tc.limit); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("NewGeneratorWithin(floor %d, limit %d): %v; want ErrOutOfRange", tc.floor, tc.limit, err)
		}
	}
}

// TestGeneratorStop: after Stop, Next returns its error, and the time
// Stop returns is that of the latest ID any call returned, calls that
// were running at the time included.
func TestGeneratorStop(t *testing.T) {
	for range 20 {
		g, err := Twitter.NewGenerator(1, 1)
		if err != nil {
			t.Fatal(err)
		}
		stopErr := errors.New("stopped")
		var mu sync.Mutex
		var ids []ID
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
		var max ID
		for _, id := range ids {
			if id > max {
				max = id
			}
		}
		p, _ := Twitter.Decompose(max)
		if last != p.Timestamp {
			t.Fatalf("Stop returned %d; the last ID is dated %d", last, p.Timestamp)
		}
		if again := g.Stop(errors.New("other")); again != last {
			t.Fatalf("a second Stop returned %d, the first %d", again, last)
		}
		if _, err := g.Next(); !errors.Is(err, stopErr) {
			t.Fatalf("Next after Stop: %v; want the first Stop's error", err)
		}
	}
}

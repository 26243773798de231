package sfgen

import "testing"

// TestGeneratorClock: a generator given a clock dates its IDs by it.
func TestGeneratorClock(t *testing.T) {
	g, err := Twitter().NewGenerator(1, 2)
	if err != nil {
		t.Fatal(err)
	}
	const ms = TwitterEpoch + 123456789
	g.clock = func() int64 { return ms }
	p, err := Twitter().Decompose(mustNext(t, g))
	if err != nil {
		t.Fatal(err)
	}
	if p.Timestamp != ms {
		t.Errorf("ID dated %d; want %d, the injected clock's", p.Timestamp, ms)
	}
}

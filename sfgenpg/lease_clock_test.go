package sfgenpg_test

import (
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/leasegen"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/sfgenpg"
)

// The tests of a process clock ahead of the database's (issue 31,
// scenario 2). The database runs on this machine's clock (or, with
// $DATABASE_URL, a container's, which is the same kernel's), and the
// lease's generator on that clock plus ahead, through sfgenpg.SetLeaseClock.
// docs/leases.md, "How far the process's clock may be ahead", states the
// threshold they check: Next refuses an ID while the process's clock is
// ahead of the database's by more than the TTL less the time since the
// database ran the last successful take or renewal.

// clockTTL is the lease TTL of these tests: renewals every second.
const clockTTL = 3 * time.Second

// aheadOf returns a clock, in Unix milliseconds, ahead of the real one.
func aheadOf(ahead time.Duration) func() int64 {
	return func() int64 { return time.Now().Add(ahead).UnixMilli() }
}

// A call is one call of Lease.Next: when it began and what it returned.
type call struct {
	at  time.Time
	err error
}

// callNext calls l.Next about every millisecond until stop is closed, and
// sends back every call. IDs must increase; an error other than the
// limit's (an ErrOutOfRange wrapping leasegen.ErrBeyondLimit) fails the
// test.
func callNext(t *testing.T, l *sfgenpg.Lease, stop <-chan struct{}) <-chan []call {
	out := make(chan []call, 1)
	go func() {
		var calls []call
		var last sfgen.ID
		defer func() { out <- calls }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			at := time.Now()
			id, err := l.Next()
			calls = append(calls, call{at, err})
			switch {
			case err == nil:
				if id <= last {
					t.Errorf("Next() = %d after %d", id, last)
					return
				}
				last = id
			case !errors.Is(err, sfgen.ErrOutOfRange) || !errors.Is(err, leasegen.ErrBeyondLimit) || errors.Is(err, sfgenpg.ErrLeaseLost):
				t.Errorf("Next(): %v; want only the limit's error (ErrOutOfRange, ErrBeyondLimit)", err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return out
}

// leaseTimes returns the database's taken_at and expires_at of node n's
// lease row.
func leaseTimes(t *testing.T, db *sql.DB, l *sfgenpg.Lease) (taken, expires time.Time) {
	t.Helper()
	if err := db.QueryRow(`SELECT taken_at, expires_at FROM `+leaseTable("public")+` WHERE datacenter_id = $1 AND machine_id = $2`,
		l.Datacenter(), l.Machine()).Scan(&taken, &expires); err != nil {
		t.Fatal(err)
	}
	return taken, expires
}

// waitRenewed waits until the lease's expiry in the database differs from
// after, and returns it; it fails the test after within.
func waitRenewed(t *testing.T, db *sql.DB, l *sfgenpg.Lease, after time.Time, within time.Duration) time.Time {
	t.Helper()
	for start := time.Now(); time.Since(start) < within; time.Sleep(5 * time.Millisecond) {
		if _, e := leaseTimes(t, db, l); !e.Equal(after) {
			return e
		}
	}
	t.Fatalf("lease %d/%d not renewed within %v of its expiry %v", l.Datacenter(), l.Machine(), within, after)
	return time.Time{}
}

// refusals returns the calls that returned an error.
func refusals(calls []call) []call {
	var r []call
	for _, c := range calls {
		if c.err != nil {
			r = append(r, c)
		}
	}
	return r
}

// TestLeaseClockAheadHalfTTL: a process whose clock is half a TTL ahead
// of the database's, below the threshold of two thirds of a TTL that
// renewals on time keep, makes IDs without a refusal through four
// renewals.
func TestLeaseClockAheadHalfTTL(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a TTL: long; run without -short")
	}
	db := leaseDB(t, pgtest.DSN(t), "public", sfgen.Twitter(), node{0, 0})
	l := take(t, db, sfgenpg.LeaseOptions{TTL: clockTTL})
	sfgenpg.SetLeaseClock(l, aheadOf(clockTTL/2))
	stop := make(chan struct{})
	out := callNext(t, l, stop)
	time.Sleep(4*clockTTL/3 + clockTTL/6)
	close(stop)
	calls := <-out
	if r := refusals(calls); len(r) > 0 {
		_, expires := leaseTimes(t, db, l)
		t.Errorf("%d of %d calls refused with the clock half a TTL ahead, the first %v after the take: %v (the lease now expires at %v)",
			len(r), len(calls), r[0].at.Sub(calls[0].at), r[0].err, expires)
	}
	if err := l.Err(); err != nil {
		t.Errorf("Err() = %v; want the lease held", err)
	}
}

// TestLeaseClockAheadNineTenthsTTL: with the clock 0.9 TTL ahead, beyond
// the threshold, Next refuses from the moment the process's time passes
// the limit the take set: 0.1 TTL after the database ran it, so the
// threshold right after a take or renewal is the whole TTL. The refusal
// is no loss: after the next renewal Next makes IDs again, for 0.1 TTL,
// and so on every renewal.
func TestLeaseClockAheadNineTenthsTTL(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a TTL: long; run without -short")
	}
	const ahead = 9 * clockTTL / 10
	db := leaseDB(t, pgtest.DSN(t), "public", sfgen.Twitter(), node{0, 0})
	l := take(t, db, sfgenpg.LeaseOptions{TTL: clockTTL})
	sfgenpg.SetLeaseClock(l, aheadOf(ahead))
	taken, _ := leaseTimes(t, db, l)
	stop := make(chan struct{})
	out := callNext(t, l, stop)
	time.Sleep(clockTTL + clockTTL/6)
	close(stop)
	calls := <-out
	r := refusals(calls)
	if len(r) == 0 {
		t.Fatalf("no refusal in %d calls over %v with the clock 0.9 TTL ahead", len(calls), clockTTL+clockTTL/6)
	}
	// The limit is the take's time plus the TTL: the first refusal comes
	// when the process's time (now + ahead) passes it, that is at
	// taken + TTL - ahead, to the millisecond.
	due := taken.Add(clockTTL - ahead)
	if r[0].at.Before(due.Add(-2 * time.Millisecond)) {
		t.Errorf("first refusal %v before it was due (%v after the take, the TTL less the clock's lead): %v", due.Sub(r[0].at), clockTTL-ahead, r[0].err)
	}
	// How soon after it was due the first refusal came is the
	// scheduler's: what counts is that no ID came after it (below).
	for _, c := range calls {
		if c.err == nil && c.at.After(due.Add(2*time.Millisecond)) && c.at.Before(taken.Add(clockTTL/3)) {
			t.Errorf("a call %v after the take made an ID, past the take's limit and before any renewal", c.at.Sub(taken))
			break
		}
	}
	// After a renewal, IDs again; and refusals again later.
	var again, refusedAgain bool
	for _, c := range calls {
		if c.at.After(r[0].at) && c.err == nil {
			again = true
		}
		if again && c.err != nil {
			refusedAgain = true
		}
	}
	if !again || !refusedAgain {
		t.Errorf("after the first refusal: IDs again %v, then refused again %v; want both (every renewal gives 0.1 TTL of IDs)", again, refusedAgain)
	}
	if err := l.Err(); err != nil {
		t.Errorf("Err() = %v; want the lease held: a refusal is no loss", err)
	}
}

// TestLeaseClockAheadLateRenewal: a renewal that fails and is retried
// lowers the threshold while it is late. With the clock half a TTL ahead,
// which renewals on time allow (TestLeaseClockAheadHalfTTL), renewals
// made to fail (the renew function renamed away) from just after one
// success until 2.2 s (11/15 TTL) later make Next refuse from half a TTL
// after that success, by the database's clock; the retry that succeeds
// once the function is back (retries come every TTL/30) makes IDs
// possible again, and the lease is not lost. A lease that tried only
// every TTL/3 would fail at TTL/3 and 2 TTL/3 after that success, and be
// lost before its third try.
func TestLeaseClockAheadLateRenewal(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a TTL: long; run without -short")
	}
	const ahead = clockTTL / 2
	db := leaseDB(t, pgtest.DSN(t), "public", sfgen.Twitter(), node{0, 0})
	l := take(t, db, sfgenpg.LeaseOptions{TTL: clockTTL})
	sfgenpg.SetLeaseClock(l, aheadOf(ahead))
	_, e0 := leaseTimes(t, db, l)
	stop := make(chan struct{})
	out := callNext(t, l, stop)
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			<-out
		}
	}()

	// The first renewal, about TTL/3 after the take; then every renewal
	// fails until the function is back.
	e1 := waitRenewed(t, db, l, e0, clockTTL/2)
	if _, err := db.Exec(`ALTER FUNCTION public.snowflake_lease_renew(integer, integer, bigint, bigint) RENAME TO snowflake_lease_renew_away`); err != nil {
		t.Fatal(err)
	}
	renewed1 := e1.Add(-clockTTL) // when the database ran that renewal
	back := renewed1.Add(11 * clockTTL / 15)
	time.Sleep(time.Until(back))
	if _, err := db.Exec(`ALTER FUNCTION public.snowflake_lease_renew_away(integer, integer, bigint, bigint) RENAME TO snowflake_lease_renew`); err != nil {
		t.Fatal(err)
	}
	e2 := waitRenewed(t, db, l, e1, clockTTL/3)
	renewed2 := e2.Add(-clockTTL)
	if renewed2.Before(back) {
		t.Fatalf("a renewal ran %v before the function was back", back.Sub(renewed2))
	}
	time.Sleep(time.Until(renewed2.Add(clockTTL / 3)))
	close(stop)
	calls := <-out

	due := renewed1.Add(clockTTL - ahead) // the limit renewal 1 set, less the lead
	r := refusals(calls)
	if len(r) == 0 {
		t.Fatalf("no refusal in %d calls while the renewal was %v late", len(calls), renewed2.Sub(renewed1)-clockTTL/3)
	}
	if r[0].at.Before(due.Add(-2 * time.Millisecond)) {
		t.Errorf("first refusal %v before it was due, at the TTL less the lead after the last renewal: %v", due.Sub(r[0].at), r[0].err)
	}
	// No ID after it was due, until the retried renewal came back (how
	// soon the first refusal came is the scheduler's).
	for _, c := range calls {
		if c.err == nil && c.at.After(due.Add(2*time.Millisecond)) && c.at.Before(renewed2) {
			t.Errorf("an ID at %v, after the limit (due %v) and before the late renewal", c.at.Sub(due), due)
			break
		}
	}
	// IDs again once the retried renewal's answer is in: allow it 100 ms.
	var after, refusedAfter int
	for _, c := range calls {
		if c.at.After(renewed2.Add(100 * time.Millisecond)) {
			after++
			if c.err != nil {
				refusedAfter++
			}
		}
	}
	if after == 0 || refusedAfter > 0 {
		t.Errorf("after the retried renewal: %d of %d calls refused; want IDs again", refusedAfter, after)
	}
	if err := l.Err(); err != nil {
		t.Errorf("Err() = %v; want the lease held (the retry came before its deadline)", err)
	}
	t.Logf("renewal %v late; %d of %d calls refused, the first %v after the last renewal", renewed2.Sub(renewed1)-clockTTL/3, len(r), len(calls), r[0].at.Sub(renewed1))
}

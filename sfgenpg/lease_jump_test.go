package sfgenpg_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
	"github.com/sfgen/sfgen/sfgenpg"
)

// The tests of docs/leases.md, "When clocks jump": what SQL release 3
// does, installed as release 3 shipped it (sqlgen.ScriptAt), so that they
// keep stating release 3 when a later release changes it (issue 31); and
// TestLeaseClockStepForwardRelease4, what the latest release does instead.

// libfaketime is where Debian's libfaketime package puts the library.
const libfaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

// release3DB is a database with SQL release 3 installed in public, node
// 0/0, Twitter layout.
func release3DB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	script, err := released.Script(sqlgen.Options{Layout: sfgen.Twitter(), Schema: "public"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(string(script)); err != nil {
		t.Fatalf("install release 3: %v", err)
	}
	return db
}

// msOf returns the time, in Unix milliseconds, of a Twitter-layout ID.
func msOf(t *testing.T, id sfgen.ID) int64 {
	t.Helper()
	p, err := sfgen.Twitter().Decompose(sfgen.ID(id))
	if err != nil {
		t.Fatal(err)
	}
	return p.Timestamp
}

// TestLeaseTwoHoldersAfterServerClockStepsForward (release 3): the
// server's clock (libfaketime) steps a minute forward while a lease with
// a 3 s TTL is held; the database sees it expired and gives its node to a
// second taker, while the first holder goes on making IDs until its next
// renewal is refused, within TTL/3 (and a little) of its last one. Their
// IDs are unique, the first's all below the second's, whose IDs are dated
// in the future, from the first's high-water mark on.
func TestLeaseTwoHoldersAfterServerClockStepsForward(t *testing.T) {
	if testing.Short() {
		t.Skip("steps a server clock (libfaketime): long; run without -short")
	}
	cluster, setOffset := fakeClockServer(t)
	db := release3DB(t, cluster.DSN())
	skew := serverSkew(t, db)
	if s := skew(); s < -time.Second || s > time.Second {
		t.Fatalf("the server's clock is %v off before the step: libfaketime's offset file not read", s)
	}

	first := take(t, db, sfgenpg.LeaseOptions{Holder: "first", TTL: clockTTL})
	type made struct {
		ids  []sfgen.ID
		last time.Time // when the call that made the last ID began
		err  error
	}
	out := make(chan made, 1)
	go func() {
		var m made
		for {
			at := time.Now()
			id, err := first.Next()
			if err != nil {
				m.err = err
				out <- m
				return
			}
			m.ids = append(m.ids, id)
			m.last = at
			time.Sleep(time.Millisecond)
		}
	}()

	setOffset("+60")
	for i := 0; skew() < 50*time.Second; i++ {
		if i == 100 {
			t.Fatalf("the server's clock did not step forward (%v off)", skew())
		}
		time.Sleep(10 * time.Millisecond)
	}
	takenAt := time.Now()
	second := take(t, db, sfgenpg.LeaseOptions{Holder: "second", TTL: clockTTL})
	if second.Datacenter() != first.Datacenter() || second.Machine() != first.Machine() {
		t.Fatalf("second holder got node %d/%d, the first holds %d/%d; release 3 gives the first's node again after the step",
			second.Datacenter(), second.Machine(), first.Datacenter(), first.Machine())
	}
	var ids2 []sfgen.ID
	for range 1000 {
		id, err := second.Next()
		if err != nil {
			t.Fatalf("second holder: %v", err)
		}
		ids2 = append(ids2, id)
	}
	if ahead := time.Duration(msOf(t, ids2[0])-time.Now().UnixMilli()) * time.Millisecond; ahead <= 0 || ahead > clockTTL {
		t.Errorf("the second holder's first ID is dated %v ahead of the clock; want in the future, by at most the TTL", ahead)
	} else {
		t.Logf("the second holder's first ID is dated %v ahead", ahead)
	}

	var m made
	select {
	case m = <-out:
	case <-time.After(2 * clockTTL):
		t.Fatal("the first holder was still making IDs two TTLs after the step")
	}
	if !errors.Is(m.err, sfgenpg.ErrLeaseLost) {
		t.Errorf("the first holder stopped with %v; want ErrLeaseLost", m.err)
	}
	overlap := m.last.Sub(takenAt)
	if overlap <= 0 {
		t.Errorf("the first holder made no ID after the second took its node (last %v before); release 3 lets it until its next renewal", -overlap)
	}
	if overlap > clockTTL/3+500*time.Millisecond {
		t.Errorf("the first holder made IDs %v after the second took its node; want within its next renewal, TTL/3 and a round trip", overlap)
	}
	t.Logf("two holders of node %d/%d for %v", first.Datacenter(), first.Machine(), overlap)
	seen := map[sfgen.ID]bool{}
	for _, id := range append(m.ids, ids2...) {
		if seen[id] {
			t.Fatalf("ID %d made twice", id)
		}
		seen[id] = true
	}
	if n := len(m.ids); n == 0 || m.ids[n-1] >= ids2[0] {
		t.Errorf("the first holder's %d IDs are not all below the second's first, %d", n, ids2[0])
	}
	setOffset("+0")
}

// TestLeaseFastHolderFutureDatesNext (release 3): a holder whose clock is
// half a TTL ahead closes; the node's next holder, with a correct clock,
// dates its IDs from the first's last ID on, about half a TTL ahead, and
// so does the one after it when it closes: the lead passes on.
func TestLeaseFastHolderFutureDatesNext(t *testing.T) {
	if testing.Short() {
		t.Skip("steps a server clock (libfaketime): long; run without -short")
	}
	db := release3DB(t, pgtest.DSN(t))
	const ahead = clockTTL / 2
	fast := take(t, db, sfgenpg.LeaseOptions{Holder: "fast", TTL: clockTTL})
	sfgenpg.SetLeaseClock(fast, aheadOf(ahead))
	var last sfgen.ID
	for range 1000 {
		id, err := fast.Next()
		if err != nil {
			t.Fatal(err)
		}
		last = id
	}
	if err := fast.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, holder := range []string{"next", "after next"} {
		l := take(t, db, sfgenpg.LeaseOptions{Holder: holder, TTL: clockTTL})
		if l.Datacenter() != fast.Datacenter() || l.Machine() != fast.Machine() {
			t.Fatalf("%s holder got node %d/%d, not the fast one's %d/%d", holder, l.Datacenter(), l.Machine(), fast.Datacenter(), fast.Machine())
		}
		id, err := l.Next()
		if err != nil {
			t.Fatal(err)
		}
		if id <= last {
			t.Fatalf("%s holder's first ID %d is not above the last before, %d", holder, id, last)
		}
		lead := time.Duration(msOf(t, id)-time.Now().UnixMilli()) * time.Millisecond
		if lead < ahead-500*time.Millisecond || lead > ahead {
			t.Errorf("%s holder (a correct clock): first ID dated %v ahead; want about %v, the fast holder's lead", holder, lead, ahead)
		}
		t.Logf("%s holder: first ID dated %v ahead", holder, lead)
		last = id
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeClockServer starts a PostgreSQL server of the test's own under
// libfaketime, its clock offset by what setOffset writes ("+60" for a
// minute ahead), starting at "+0"; it skips the test where there is no
// libfaketime (and fails it under CI=true).
func fakeClockServer(t *testing.T) (cluster *pgcluster.Cluster, setOffset func(string)) {
	t.Helper()
	if _, err := os.Stat(libfaketime); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no libfaketime: %v", err)
		}
		t.Skipf("no libfaketime: %v", err)
	}
	// Not t.TempDir, whose parent only this user may enter: the server
	// may run as another.
	dir, err := os.MkdirTemp("", "sffaketime")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	offset := filepath.Join(dir, "offset")
	setOffset = func(s string) {
		t.Helper()
		if err := os.WriteFile(offset, []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setOffset("+0")
	t.Setenv("LD_PRELOAD", libfaketime)
	t.Setenv("FAKETIME_TIMESTAMP_FILE", offset)
	t.Setenv("FAKETIME_NO_CACHE", "1")
	t.Setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1")
	t.Setenv("DONT_FAKE_MONOTONIC", "1")
	return pgtest.Server(t), setOffset
}

// serverSkew returns a function that says how far db's server clock is
// from this process's.
func serverSkew(t *testing.T, db *sql.DB) func() time.Duration {
	return func() time.Duration {
		t.Helper()
		var ms int64
		if err := db.QueryRow(`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint`).Scan(&ms); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ms-time.Now().UnixMilli()) * time.Millisecond
	}
}

// TestLeaseClockStepForwardRelease4: the release 3 scenario of
// TestLeaseTwoHoldersAfterServerClockStepsForward on the latest release.
// The server's clock steps a minute forward while a lease with a 3 s TTL
// is held; a take right after the step, and one a TTL/2 later, get
// other nodes (the first's is held a TTL after the database first saw
// its lease expired), the first holder stops with ErrLeaseLost at its next
// renewal, and only a take more than a TTL after that first sight gets its
// node, above the first holder's IDs.
func TestLeaseClockStepForwardRelease4(t *testing.T) {
	if testing.Short() {
		t.Skip("steps a server clock (libfaketime): long; run without -short")
	}
	cluster, setOffset := fakeClockServer(t)
	db := leaseDB(t, cluster.DSN(), "public", sfgen.Twitter(), node{0, 0})
	skew := serverSkew(t, db)
	if s := skew(); s < -time.Second || s > time.Second {
		t.Fatalf("the server's clock is %v off before the step: libfaketime's offset file not read", s)
	}
	first := take(t, db, sfgenpg.LeaseOptions{Holder: "first", TTL: clockTTL})
	var last sfgen.ID
	for range 100 {
		id, err := first.Next()
		if err != nil {
			t.Fatal(err)
		}
		last = id
	}
	setOffset("+60")
	for i := 0; skew() < 50*time.Second; i++ {
		if i == 100 {
			t.Fatalf("the server's clock did not step forward (%v off)", skew())
		}
		time.Sleep(10 * time.Millisecond)
	}
	seen := time.Now()
	for _, holder := range []string{"right after the step", "half a TTL later"} {
		l := take(t, db, sfgenpg.LeaseOptions{Holder: holder, TTL: clockTTL})
		if l.Datacenter() == first.Datacenter() && l.Machine() == first.Machine() {
			t.Fatalf("the take %s got the first holder's node %d/%d while it still counts it as its own", holder, l.Datacenter(), l.Machine())
		}
		time.Sleep(clockTTL / 2)
	}
	// The first holder learns it at its next renewal.
	deadline := time.Now().Add(2 * clockTTL)
	for {
		id, err := first.Next()
		if errors.Is(err, sfgenpg.ErrLeaseLost) {
			break
		}
		if err != nil {
			t.Fatalf("the first holder: %v; want ErrLeaseLost", err)
		}
		last = id
		if time.Now().After(deadline) {
			t.Fatal("the first holder was still making IDs two TTLs after the step")
		}
		time.Sleep(time.Millisecond)
	}
	if wait := clockTTL + 200*time.Millisecond - time.Since(seen); wait > 0 {
		time.Sleep(wait)
	}
	again := take(t, db, sfgenpg.LeaseOptions{Holder: "a TTL later", TTL: clockTTL})
	if again.Datacenter() != first.Datacenter() || again.Machine() != first.Machine() {
		t.Fatalf("a TTL after the database saw the lease expired, a take got %d/%d; want the first holder's %d/%d, free again",
			again.Datacenter(), again.Machine(), first.Datacenter(), first.Machine())
	}
	if id, err := again.Next(); err != nil || id <= last {
		t.Fatalf("the node's next holder made %d (%v); want above the first holder's last ID %d", id, err, last)
	}
	setOffset("+0")
}

package sfgenpg_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
	"github.com/sfgen/sfgen/sfgenpg"
)

// tinyLayout has four nodes (datacenter 0-1, machine 0-1), so that tests
// can use them all up.
var tinyLayout = func() sfgen.Layout {
	l, err := sfgen.ParseLayout("epoch=1288834974657 timestamp=45 datacenter=1 machine=1 sequence=16")
	if err != nil {
		panic(err)
	}
	return l
}()

type node struct{ dc, m int64 }

func (n node) String() string { return fmt.Sprintf("%d/%d", n.dc, n.m) }

// leaseDB is a database with sfgen installed in schema, node n, layout l.
func leaseDB(t *testing.T, dsn, schema string, l sfgen.Layout, n node) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := install.Apply(context.Background(), db, sqlgen.Options{Layout: l, Schema: schema, Datacenter: n.dc, Machine: n.m}); err != nil {
		t.Fatalf("install into %s: %v", schema, err)
	}
	return db
}

// leaseTable is the lease table of the sfgen schema called schema: since
// release 4, in its private schema (catalog.PrivateSchema), which only
// the owner (these tests' role) can reach.
func leaseTable(schema string) string {
	return pgident.Quote(catalog.PrivateSchema(schema)) + ".snowflake_lease"
}

// leased says which node l has, for messages: "no lease" when l is nil.
func leased(l *sfgenpg.Lease) string {
	if l == nil {
		return "no lease"
	}
	return fmt.Sprintf("a lease of node %d/%d", l.Datacenter(), l.Machine())
}

func take(t *testing.T, db *sql.DB, o sfgenpg.LeaseOptions) *sfgenpg.Lease {
	t.Helper()
	l, err := sfgenpg.TakeLease(context.Background(), db, o)
	if err != nil {
		t.Fatalf("TakeLease(%+v): %v", o, err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

// TestLeaseAvoidsEveryNodeInUse: with a layout of four nodes, one the
// schema's own, one another schema's of the same layout, one reserved,
// the only lease to be had is the fourth node; then none is free, in this
// schema or (release 4) in the other one, which its lease and reservation
// hold too. A schema of another layout does not count.
func TestLeaseAvoidsEveryNodeInUse(t *testing.T) {
	dsn := pgtest.DSN(t)
	db := leaseDB(t, dsn, "public", tinyLayout, node{0, 0})
	leaseDB(t, dsn, "other", tinyLayout, node{1, 0})
	leaseDB(t, dsn, "twitter", sfgen.Twitter(), node{1, 1}) // another layout: another ID space
	if _, err := db.Exec(`SELECT public.snowflake_lease_reserve(0, 1, 'database staging')`); err != nil {
		t.Fatal(err)
	}
	// Node 0/0 was leased once, before the schema took it as its own: its
	// expired lease must not be handed out again.
	if _, err := db.Exec(`INSERT INTO ` + leaseTable("public") + ` (datacenter_id, machine_id, holder, token, taken_at, expires_at, floor_ms, high_water_ms) VALUES (0, 0, 'long gone', 7, pg_catalog.now() - interval '1 h', pg_catalog.now() - interval '1 h', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	// Take leases until none is free: exactly one, node 1/1.
	var leases []*sfgenpg.Lease
	var err error
	for range 4 {
		var l *sfgenpg.Lease
		if l, err = sfgenpg.TakeLease(context.Background(), db, sfgenpg.LeaseOptions{TTL: time.Minute}); err != nil {
			break
		}
		t.Cleanup(func() { l.Close(context.Background()) })
		leases = append(leases, l)
	}
	if !errors.Is(err, sfgenpg.ErrNoFreeNode) {
		t.Fatalf("TakeLease until none is free: %v; want ErrNoFreeNode", err)
	}
	t.Log(err)
	var got []node
	for _, l := range leases {
		got = append(got, node{l.Datacenter(), l.Machine()})
	}
	if len(got) != 1 || got[0] != (node{1, 1}) {
		t.Fatalf("leases of nodes %v; want just 1/1, the only node not in use", got)
	}
	// The other schema of the layout: its own node, this schema's and the
	// reservation and lease held here leave it none.
	if l, err := sfgenpg.TakeLease(context.Background(), db, sfgenpg.LeaseOptions{Schema: "other", TTL: time.Minute}); !errors.Is(err, sfgenpg.ErrNoFreeNode) {
		t.Fatalf("TakeLease in schema other with the four nodes held in public and other: %v %v; want ErrNoFreeNode", leased(l), err)
	}
	l := leases[0]
	if l.Layout().String() != tinyLayout.String() {
		t.Errorf("lease layout %s, want the schema's %s", l.Layout(), tinyLayout)
	}
	// Its IDs carry its node and are dated now, in the schema's layout.
	id, err := l.Next()
	if err != nil {
		t.Fatal(err)
	}
	p, err := tinyLayout.Decompose(sfgen.ID(id))
	if err != nil || p.Datacenter != 1 || p.Machine != 1 || time.Since(p.Time()).Abs() > time.Minute {
		t.Errorf("lease ID %d decodes to %+v, %v; want node 1/1, now", id, p, err)
	}
	// Closed, its node is free again, and a new lease starts above its IDs.
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Next(); !errors.Is(err, sfgenpg.ErrLeaseClosed) {
		t.Errorf("Next after Close: %v; want ErrLeaseClosed", err)
	}
	l2 := take(t, db, sfgenpg.LeaseOptions{TTL: time.Minute})
	id2, err := l2.Next()
	if err != nil || id2 <= id {
		t.Errorf("the next holder's first ID %d (%v); want above the last holder's %d", id2, err, id)
	}
}

// TestLeaseNoLeases: a schema without sfgen, or at a release before
// leases, is ErrNoLeases, saying which.
func TestLeaseNoLeases(t *testing.T) {
	dsn := pgtest.DSN(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = sfgenpg.TakeLease(context.Background(), db, sfgenpg.LeaseOptions{})
	if !errors.Is(err, sfgenpg.ErrNoLeases) || !strings.Contains(err.Error(), "schema public has no sfgen install") {
		t.Errorf("TakeLease on an empty database: %v; want ErrNoLeases, no sfgen install", err)
	}
	// Release 2: its migrations' Up sections, as goose would apply them.
	files, err := released.Migrations(sqlgen.Options{Layout: sfgen.Twitter(), Datacenter: 1, Machine: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files[:2] {
		if _, err := db.Exec(f.Up()); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
	}
	_, err = sfgenpg.TakeLease(context.Background(), db, sfgenpg.LeaseOptions{})
	if !errors.Is(err, sfgenpg.ErrNoLeases) || !strings.Contains(err.Error(), "schema public is at sfgen release 2, before leases (release 3)") {
		t.Errorf("TakeLease on release 2: %v; want ErrNoLeases, release 2", err)
	}
	if _, err := sfgenpg.TakeLease(context.Background(), db, sfgenpg.LeaseOptions{Schema: "Bad"}); err == nil || errors.Is(err, sfgenpg.ErrNoLeases) {
		t.Errorf("TakeLease with schema \"Bad\": %v; want an invalid schema name", err)
	}
	if _, err := sfgenpg.TakeLease(context.Background(), db, sfgenpg.LeaseOptions{TTL: time.Millisecond}); !errors.Is(err, sfgen.ErrOutOfRange) {
		t.Errorf("TakeLease with TTL 1ms: %v; want ErrOutOfRange", err)
	}
}

// TestLeasesConcurrent: many leases taken at once are all different.
func TestLeasesConcurrent(t *testing.T) {
	db := leaseDB(t, pgtest.DSN(t), "public", sfgen.Twitter(), node{3, 3})
	db.SetMaxOpenConns(20)
	var mu sync.Mutex
	seen := map[node]bool{{3, 3}: true}
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			l, err := sfgenpg.TakeLease(context.Background(), db, sfgenpg.LeaseOptions{TTL: time.Minute})
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(func() { l.Close(context.Background()) })
			mu.Lock()
			defer mu.Unlock()
			n := node{l.Datacenter(), l.Machine()}
			if seen[n] {
				t.Errorf("node %s leased twice, or the schema's own", n)
			}
			seen[n] = true
		})
	}
	wg.Wait()
}

// TestLeaseLost: once the database no longer holds the lease, Next stops
// with ErrLeaseLost (and the renewals notice it within a TTL/3).
func TestLeaseLost(t *testing.T) {
	db := leaseDB(t, pgtest.DSN(t), "public", sfgen.Twitter(), node{0, 0})
	l := take(t, db, sfgenpg.LeaseOptions{TTL: time.Second})
	if _, err := l.Next(); err != nil {
		t.Fatal(err)
	}
	// Still held after several renewals.
	time.Sleep(1500 * time.Millisecond)
	if _, err := l.Next(); err != nil {
		t.Fatalf("Next after 1.5 s of renewals: %v", err)
	}
	if _, err := db.Exec(`UPDATE `+leaseTable("public")+` SET expires_at = pg_catalog.clock_timestamp() - interval '1 s'
		WHERE datacenter_id = $1 AND machine_id = $2`, l.Datacenter(), l.Machine()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lease was not noticed lost")
	}
	if _, err := l.Next(); !errors.Is(err, sfgenpg.ErrLeaseLost) {
		t.Errorf("Next after the lease was lost: %v; want ErrLeaseLost", err)
	}
	if !errors.Is(l.Err(), sfgenpg.ErrLeaseLost) {
		t.Errorf("Err() = %v; want ErrLeaseLost", l.Err())
	}
}

// TestLeaseReleaseKeepsFloor: a holder that gives its lease back cannot
// lower the node's high-water mark below the floor it was given, whatever
// last millisecond it reports, so the next holder still starts above
// every earlier holder's IDs.
func TestLeaseReleaseKeepsFloor(t *testing.T) {
	db := leaseDB(t, pgtest.DSN(t), "public", tinyLayout, node{0, 0})
	for _, n := range []node{{0, 1}, {1, 0}} {
		if _, err := db.Exec(`SELECT public.snowflake_lease_reserve($1, $2, 'elsewhere')`, n.dc, n.m); err != nil {
			t.Fatal(err)
		}
	}
	ahead := time.Now().Add(time.Hour).UnixMilli()
	if _, err := db.Exec(`INSERT INTO `+leaseTable("public")+` (datacenter_id, machine_id, holder, token, taken_at, expires_at, floor_ms, high_water_ms) VALUES (1, 1, 'gone', 7, pg_catalog.now(), pg_catalog.now() - interval '1 s', 0, $1)`, ahead); err != nil {
		t.Fatal(err)
	}
	var token, floor, high int64
	if err := db.QueryRow(`SELECT token, floor_ms, high_water_ms FROM public.snowflake_lease_take('sql', 60000)`).Scan(&token, &floor, &high); err != nil {
		t.Fatal(err)
	}
	if floor != ahead+1 || high < floor {
		t.Fatalf("take: floor %d, high-water %d; want floor %d and high-water above it", floor, high, ahead+1)
	}
	var ok bool
	if err := db.QueryRow(`SELECT public.snowflake_lease_release(1, 1, $1, 0)`, token).Scan(&ok); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	if err := db.QueryRow(`SELECT high_water_ms FROM ` + leaseTable("public") + ` WHERE datacenter_id = 1 AND machine_id = 1`).Scan(&high); err != nil {
		t.Fatal(err)
	}
	if high != ahead {
		t.Errorf("high-water after a release reporting last_ms 0: %d; want %d, the floor less one", high, ahead)
	}
	if err := db.QueryRow(`SELECT public.snowflake_lease_release(1, 1, $1, 0)`, token).Scan(&ok); err != nil || ok {
		t.Errorf("a second release of the same lease: %v %v; want false", ok, err)
	}
}

// TestLeaseLostUnreachable: when the database cannot be reached, the
// lease stops making IDs a TTL after its last renewal was sent, before
// the database could give the node to anyone else.
func TestLeaseLostUnreachable(t *testing.T) {
	db := leaseDB(t, pgtest.DSN(t), "public", sfgen.Twitter(), node{0, 0})
	l, err := sfgenpg.TakeLease(context.Background(), db, sfgenpg.LeaseOptions{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	taken := time.Now()
	db.Close() // every renewal fails from here on
	var last error
	var lastOK time.Time // when the last call that made an ID began
	for time.Since(taken) < 5*time.Second {
		before := time.Now()
		if _, last = l.Next(); last != nil {
			break
		}
		lastOK = before
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(last, sfgenpg.ErrLeaseLost) {
		t.Fatalf("Next with the database unreachable for 5 s: %v; want ErrLeaseLost", last)
	}
	if since := lastOK.Sub(taken); since > time.Second {
		t.Errorf("Next made an ID %v after the lease was taken, more than its 1 s TTL with no renewal", since)
	}
	<-l.Done()
	if err := l.Close(context.Background()); err != nil {
		t.Errorf("Close of a lost lease: %v; want nil (nothing to give back)", err)
	}
}

// TestLeaseStartsAboveHighWater: a node whose last holder's high-water
// mark lies ahead of the clock (its clock was ahead, or this one's is
// behind) is leased last (release 4: after a node never leased, though it
// expired long ago), and then with IDs dated above that mark, made without
// waiting for the clock to get there.
func TestLeaseStartsAboveHighWater(t *testing.T) {
	dsn := pgtest.DSN(t)
	db := leaseDB(t, dsn, "public", tinyLayout, node{0, 0})
	if _, err := db.Exec(`SELECT public.snowflake_lease_reserve(0, 1, 'elsewhere')`); err != nil {
		t.Fatal(err)
	}
	ahead := time.Now().Add(10 * time.Minute).UnixMilli()
	if _, err := db.Exec(`INSERT INTO `+leaseTable("public")+` (datacenter_id, machine_id, holder, token, taken_at, expires_at, floor_ms, high_water_ms) VALUES (1, 1, 'gone', 7, pg_catalog.now() - interval '1 h', pg_catalog.now() - interval '1 h', 0, $1)`, ahead); err != nil {
		t.Fatal(err)
	}
	// Node 1/0, never leased, comes before 1/1, whose high-water mark is
	// more than sqlgen.LeaseFutureBound ahead.
	if ahead-time.Now().UnixMilli() <= sqlgen.LeaseFutureBound.Milliseconds() {
		t.Fatal("the high-water mark is not beyond sqlgen.LeaseFutureBound")
	}
	first := take(t, db, sfgenpg.LeaseOptions{TTL: time.Minute})
	if n := (node{first.Datacenter(), first.Machine()}); n != (node{1, 0}) {
		t.Fatalf("first lease of node %s; want 1/0, never leased, before 1/1, dated 10 min ahead", n)
	}
	if a := first.FloorAhead(); a != 0 {
		t.Errorf("FloorAhead of node 1/0, never leased: %v; want 0", a)
	}
	before := time.Now()
	l := take(t, db, sfgenpg.LeaseOptions{TTL: time.Minute})
	after := time.Now()
	if n := (node{l.Datacenter(), l.Machine()}); n != (node{1, 1}) {
		t.Fatalf("second lease of node %s; want 1/1, the only one left", n)
	}
	// Its floor, the mark plus 1 ms, less the database's clock during the
	// take (this machine's, as time.Now; to the ms).
	floor := time.UnixMilli(ahead + 1)
	if a, least, most := l.FloorAhead(), floor.Sub(after), floor.Sub(before); a < least-time.Millisecond || a > most+time.Millisecond {
		t.Errorf("FloorAhead of node 1/1: %v; want from %v to %v (its floor, 10 min ahead, less the database's clock during the take)", a, least, most)
	}
	var last sfgen.ID
	start := time.Now()
	// More than one millisecond's sequence (2^16), without waiting ten minutes.
	for i := range 1<<16 + 10 {
		id, err := l.Next()
		if err != nil {
			t.Fatalf("ID %d: %v", i, err)
		}
		if id <= last {
			t.Fatalf("ID %d: %d after %d", i, id, last)
		}
		last = id
		if i == 0 {
			p, _ := tinyLayout.Decompose(sfgen.ID(id))
			if p.Timestamp != ahead+1 {
				t.Errorf("first ID dated %d; want %d, the millisecond after the high-water mark", p.Timestamp, ahead+1)
			}
		}
	}
	p, _ := tinyLayout.Decompose(sfgen.ID(last))
	if p.Timestamp != ahead+2 {
		t.Errorf("ID 2^16+10 dated %d; want %d (borrowed, not waited for)", p.Timestamp, ahead+2)
	}
	t.Logf("2^16+10 IDs above a high-water mark 10 min ahead in %v", time.Since(start))
}

// TestMain's lease holder: a child process that takes a lease, prints its
// node and then IDs, one a line, until killed.
const holderEnv = "SFGEN_TEST_LEASE_HOLDER"

func runLeaseHolder() {
	dsn, schema, _ := strings.Cut(os.Getenv(holderEnv), " ")
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	l, err := sfgenpg.TakeLease(context.Background(), db, sfgenpg.LeaseOptions{Schema: schema, TTL: 2 * time.Second, Holder: "test holder"})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "node %d %d\n", l.Datacenter(), l.Machine())
	w.Flush()
	for {
		id, err := l.Next()
		if err != nil {
			fmt.Fprintln(w, "error", err)
			w.Flush()
			os.Exit(1)
		}
		fmt.Fprintln(w, id)
		w.Flush()
		time.Sleep(100 * time.Microsecond)
	}
}

// holder is a lease holder in a child process.
type holder struct {
	cmd  *exec.Cmd
	node node
	mu   sync.Mutex
	ids  []int64
	done chan struct{}
}

func startHolder(t *testing.T, dsn, schema string) *holder {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+dsn+" "+schema)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, done: make(chan struct{})}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatalf("lease holder printed nothing: %v", sc.Err())
	}
	if _, err := fmt.Sscanf(sc.Text(), "node %d %d", &h.node.dc, &h.node.m); err != nil {
		t.Fatalf("lease holder: %q", sc.Text())
	}
	go func() {
		defer close(h.done)
		for sc.Scan() {
			id, err := strconv.ParseInt(sc.Text(), 10, 64)
			if err != nil {
				t.Errorf("lease holder %s: %s", h.node, sc.Text())
				return
			}
			h.mu.Lock()
			h.ids = append(h.ids, id)
			h.mu.Unlock()
		}
	}()
	return h
}

// kill ends the holder with SIGKILL and returns the IDs it printed.
func (h *holder) kill(t *testing.T) []int64 {
	t.Helper()
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-h.done
	h.cmd.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ids
}

// TestLeaseFleet is the fleet of issue 12: three databases, each with a
// node of its own and inserting at once, and two processes holding leases
// from the first (which knows the other two databases' nodes by their
// reservations). Every ID is unique; the leases differ from each other and
// from the databases' nodes. Both holders are killed with SIGKILL; the
// leases closed meanwhile free their nodes at once, but a killed holder's
// node is not leased again before its lease expires, nor (release 4) until
// a TTL after the database first saw it expired, and is leased once that
// TTL is over; the next holder of that node starts above the killed one's
// last ID, and its IDs repeat none of the fleet's.
func TestLeaseFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("kills holders and waits out TTLs: long; run without -short")
	}
	// The tiny layout's four nodes: three databases and one lease at a
	// time would use them all, so this fleet uses two bits of machine.
	fleet, err := sfgen.ParseLayout("epoch=1288834974657 timestamp=44 datacenter=1 machine=2 sequence=16")
	if err != nil {
		t.Fatal(err)
	}
	dbNodes := []node{{0, 0}, {0, 1}, {1, 0}}
	var dsns []string
	var dbs []*sql.DB
	for _, n := range dbNodes {
		dsn := pgtest.DSN(t)
		dsns = append(dsns, dsn)
		dbs = append(dbs, leaseDB(t, dsn, "public", fleet, n))
	}
	for _, n := range dbNodes[1:] {
		if _, err := dbs[0].Exec(`SELECT public.snowflake_lease_reserve($1, $2, 'another database')`, n.dc, n.m); err != nil {
			t.Fatal(err)
		}
	}
	// The five nodes left: 0/2, 0/3, 1/1, 1/2, 1/3. Lease three of them
	// here, so that two holders get the other two and nothing else is free.
	var blockers []*sfgenpg.Lease
	for range 3 {
		blockers = append(blockers, take(t, dbs[0], sfgenpg.LeaseOptions{TTL: time.Minute}))
	}
	a, b := startHolder(t, dsns[0], "public"), startHolder(t, dsns[0], "public")
	used := map[node]string{}
	for i, n := range dbNodes {
		used[n] = fmt.Sprintf("database %d", i)
	}
	for i, l := range blockers {
		used[node{l.Datacenter(), l.Machine()}] = fmt.Sprintf("lease %d", i)
	}
	for _, h := range []*holder{a, b} {
		if u, ok := used[h.node]; ok {
			t.Fatalf("a holder got node %s, which %s has", h.node, u)
		}
		used[h.node] = "holder"
	}
	// The databases insert while the holders make IDs.
	ids := map[int64]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, db := range dbs {
		if _, err := db.Exec(`CREATE TABLE t (id bigint PRIMARY KEY DEFAULT public.snowflake_next_id(), n int)`); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			rows, err := db.Query(`INSERT INTO t (n) SELECT g FROM pg_catalog.generate_series(1, 20000) g RETURNING id`)
			if err != nil {
				t.Error(err)
				return
			}
			defer rows.Close()
			for rows.Next() {
				var id int64
				rows.Scan(&id)
				mu.Lock()
				if o, dup := ids[id]; dup {
					t.Errorf("ID %d from database %d and %s", id, i, o)
				}
				ids[id] = fmt.Sprintf("database %d", i)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	time.Sleep(300 * time.Millisecond)
	aIDs := a.kill(t)
	killed := time.Now()
	bIDs := b.kill(t)
	for _, h := range []struct {
		name string
		ids  []int64
	}{{"holder a", aIDs}, {"holder b", bIDs}} {
		if len(h.ids) == 0 {
			t.Fatalf("%s made no IDs", h.name)
		}
		for _, id := range h.ids {
			if o, dup := ids[id]; dup {
				t.Errorf("ID %d from %s and %s", id, h.name, o)
			}
			ids[id] = h.name
		}
	}
	t.Logf("%d IDs, all unique; holders %s and %s", len(ids), a.node, b.node)
	// Every node free again but the killed holders': the closed leases'
	// at once, the killed holders' not before their leases expire.
	closed := map[node]bool{}
	for _, l := range blockers {
		closed[node{l.Datacenter(), l.Machine()}] = true
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var again []*sfgenpg.Lease
	for range 3 {
		l := take(t, dbs[0], sfgenpg.LeaseOptions{TTL: time.Minute})
		if n := (node{l.Datacenter(), l.Machine()}); !closed[n] {
			t.Fatalf("with the closed leases' nodes free, a lease of node %s; want one of theirs", n)
		}
		again = append(again, l)
	}
	if time.Since(killed) < 2*time.Second {
		if l, err := sfgenpg.TakeLease(context.Background(), dbs[0], sfgenpg.LeaseOptions{TTL: time.Minute}); !errors.Is(err, sfgenpg.ErrNoFreeNode) {
			t.Fatalf("a killed holder's node was leased within its TTL: %v %v", leased(l), err)
		}
	}
	// Once both killed leases have expired on the database's clock, their
	// nodes stay theirs a TTL more: a step of the database's clock must
	// not give a node to another holder while its holder still counts it
	// as its own.
	killedRows := `FROM ` + leaseTable("public") + ` WHERE (datacenter_id, machine_id) IN (($1, $2), ($3, $4))`
	args := []any{a.node.dc, a.node.m, b.node.dc, b.node.m}
	for expired := 0; expired < 2; {
		if time.Since(killed) > 10*time.Second {
			t.Fatalf("the killed holders' leases (2 s TTL) have not expired 10 s after: %d of 2", expired)
		}
		time.Sleep(50 * time.Millisecond)
		if err := dbs[0].QueryRow(`SELECT count(*) `+killedRows+` AND expires_at <= pg_catalog.clock_timestamp()`, args...).Scan(&expired); err != nil {
			t.Fatal(err)
		}
	}
	if l, err := sfgenpg.TakeLease(context.Background(), dbs[0], sfgenpg.LeaseOptions{TTL: time.Minute}); !errors.Is(err, sfgenpg.ErrNoFreeNode) {
		t.Fatalf("a killed holder's node was leased as soon as its lease expired, not a TTL after: %v %v", leased(l), err)
	}
	// The take above recorded when it first saw them expired (a take that
	// finds none free returns no node rather than an error, which would
	// undo that: TestLeaseExpiredNodeFreeWhenNoneIs), and so would the one
	// that gets the node a lease gives back now. They are free a TTL (2 s)
	// later, and not before.
	gave := node{again[0].Datacenter(), again[0].Machine()}
	if err := again[0].Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := take(t, dbs[0], sfgenpg.LeaseOptions{TTL: time.Minute}); (node{l.Datacenter(), l.Machine()}) != gave {
		t.Fatalf("with node %s given back, a lease of node %d/%d; want %s", gave, l.Datacenter(), l.Machine(), gave)
	}
	if l, err := sfgenpg.TakeLease(context.Background(), dbs[0], sfgenpg.LeaseOptions{TTL: time.Minute}); !errors.Is(err, sfgenpg.ErrNoFreeNode) {
		t.Fatalf("a killed holder's node was leased less than a TTL after its lease was seen expired: %v %v", leased(l), err)
	}
	var seen int
	var waitMs int64
	if err := dbs[0].QueryRow(`SELECT count(expired_seen_at), COALESCE(pg_catalog.ceil(1000 * pg_catalog.date_part('epoch',
			max(expired_seen_at + ttl_ms * interval '1 ms') - pg_catalog.clock_timestamp()))::bigint, 0)
		`+killedRows, args...).Scan(&seen, &waitMs); err != nil {
		t.Fatal(err)
	}
	wait := time.Duration(waitMs) * time.Millisecond
	if seen != 2 || wait <= 0 || wait > 2*time.Second {
		t.Fatalf("the killed holders' leases: %d seen expired, free in %v; want 2, in at most their 2 s TTL", seen, wait)
	}
	time.Sleep(wait + 200*time.Millisecond)
	last := map[node]int64{a.node: aIDs[len(aIDs)-1], b.node: bIDs[len(bIDs)-1]}
	for range 2 {
		l := take(t, dbs[0], sfgenpg.LeaseOptions{TTL: time.Minute})
		n := node{l.Datacenter(), l.Machine()}
		prev, ok := last[n]
		if !ok {
			t.Fatalf("after the TTL, lease of node %s; want a killed holder's", n)
		}
		delete(last, n)
		for i := range 1000 {
			id, err := l.Next()
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 && int64(id) <= prev {
				t.Errorf("node %s's next holder starts at %d, not above the killed holder's last ID %d", n, id, prev)
			}
			if o, dup := ids[int64(id)]; dup {
				t.Errorf("ID %d from node %s's next holder and %s", id, n, o)
			}
			ids[int64(id)] = "next holder of " + n.String()
		}
	}
}

// TestLeaseExpiredNodeFreeWhenNoneIs: with every node of the layout in
// use and one lease's holder gone (it stopped renewing, as a killed
// process does), its node is free again a TTL after the database first
// saw the lease expired, even though every take meanwhile failed for want
// of a free node: the takes that find none must not keep the node held
// for ever.
func TestLeaseExpiredNodeFreeWhenNoneIs(t *testing.T) {
	db := leaseDB(t, pgtest.DSN(t), "public", tinyLayout, node{0, 0})
	for _, n := range []node{{0, 1}, {1, 0}} {
		if _, err := db.Exec(`SELECT public.snowflake_lease_reserve($1, $2, 'elsewhere')`, n.dc, n.m); err != nil {
			t.Fatal(err)
		}
	}
	// The last node, leased for 1 s and never renewed.
	var dc, m int64
	if err := db.QueryRow(`SELECT datacenter_id, machine_id FROM public.snowflake_lease_take('gone', 1000)`).Scan(&dc, &m); err != nil {
		t.Fatal(err)
	}
	if (node{dc, m}) != (node{1, 1}) {
		t.Fatalf("lease of node %d/%d; want 1/1, the only one free", dc, m)
	}
	time.Sleep(1100 * time.Millisecond)
	var expired bool
	if err := db.QueryRow(`SELECT expires_at < pg_catalog.clock_timestamp() FROM ` + leaseTable("public") +
		` WHERE datacenter_id = 1 AND machine_id = 1`).Scan(&expired); err != nil || !expired {
		t.Fatalf("the lease of 1/1 expired after 1.1 s of its 1 s TTL: %v %v; want true", expired, err)
	}
	// The first take to see it expired finds nothing free (its node is
	// held a TTL more), and so does every take for a TTL; after that
	// TTL (and a margin), one must get node 1/1.
	first := time.Now()
	for {
		l, err := sfgenpg.TakeLease(context.Background(), db, sfgenpg.LeaseOptions{TTL: time.Second})
		if err == nil {
			t.Cleanup(func() { l.Close(context.Background()) })
			if n := (node{l.Datacenter(), l.Machine()}); n != (node{1, 1}) || time.Since(first) < 900*time.Millisecond {
				t.Fatalf("lease of node %s %v after its lease was first seen expired; want 1/1, a TTL (1 s) after", n, time.Since(first))
			}
			return
		}
		if !errors.Is(err, sfgenpg.ErrNoFreeNode) {
			t.Fatal(err)
		}
		if time.Since(first) > 3*time.Second {
			var seen sql.NullTime
			db.QueryRow(`SELECT expired_seen_at FROM ` + leaseTable("public") + ` WHERE datacenter_id = 1 AND machine_id = 1`).Scan(&seen)
			t.Fatalf("node 1/1 still not free 3 s (3 TTLs) after takes first saw its lease expired: %v; expired_seen_at %v", err, seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLeaseLongSchemaName: a schema whose name leaves no room for
// "_sfgen" keeps its leases in a private schema with a hashed name,
// which Go (catalog.PrivateSchema) and the registry's SQL must compute
// alike: a reservation made there is what the registry reads (it shows in
// snowflake_nodes_held(), and no take gets its node).
func TestLeaseLongSchemaName(t *testing.T) {
	tiny, err := sfgen.ParseLayout("epoch=1288834974657 timestamp=45 datacenter=1 machine=1 sequence=16")
	if err != nil {
		t.Fatal(err)
	}
	schema := "long_schema_name_" + strings.Repeat("x", 60-len("long_schema_name_"))
	if private := catalog.PrivateSchema(schema); private == schema+catalog.PrivateSchemaSuffix || len(private) > 63 {
		t.Fatalf("PrivateSchema(%q) = %q: want a hashed name of at most 63 bytes", schema, private)
	}
	db := leaseDB(t, pgtest.DSN(t), schema, tiny, node{0, 0})
	if _, err := db.Exec(`SELECT ` + schema + `.snowflake_lease_reserve(1, 1, 'elsewhere')`); err != nil {
		t.Fatal(err)
	}
	var held int
	if err := db.QueryRow(`SELECT count(*) FROM ` + schema + `.snowflake_nodes_held() WHERE kind = 'reservation' AND datacenter_id = 1 AND machine_id = 1`).Scan(&held); err != nil || held != 1 {
		t.Fatalf("the registry lists %d reservations of 1/1 (%v); want 1: it did not find the lease table Go named", held, err)
	}
	for range 2 { // the two nodes left
		if l := take(t, db, sfgenpg.LeaseOptions{Schema: schema, TTL: time.Minute}); l.Datacenter() == 1 && l.Machine() == 1 {
			t.Fatal("a take got the reserved node 1/1")
		}
	}
}

package sfgenpg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/leasegen"
	"github.com/sfgen/sfgen/internal/sqlstate"
)

// Lease errors.
var (
	// ErrLeaseLost is returned by Lease.Next once the lease is lost: not
	// renewed before it expired (the database unreachable for a TTL, or
	// the process stopped for that long), or taken from its holder. The
	// node may be another process's by then, so the lease makes no more
	// IDs; take a new one.
	ErrLeaseLost = errors.New("node lease lost")
	// ErrLeaseClosed is returned by Lease.Next after Close.
	ErrLeaseClosed = errors.New("node lease closed")
	// ErrNoFreeNode is returned by TakeLease when every node of the
	// layout is leased, reserved or a schema's own in that database, in
	// any of its sfgen schemas of that layout (release 4), or held by a
	// lease whose holder stopped renewing it and that the database first
	// saw expired less than its TTL ago.
	ErrNoFreeNode = sqlstate.ErrNoFreeNode
	// ErrNoLeases is returned by TakeLease for a schema whose sfgen
	// release predates leases (release 3), or that has no sfgen install.
	ErrNoLeases = errors.New("schema has no sfgen node leases")
)

// DefaultLeaseTTL is the TTL of a lease whose LeaseOptions.TTL is 0.
const DefaultLeaseTTL = 15 * time.Second

// LeaseOptions say which database schema leases a node, to whom, and for
// how long.
type LeaseOptions struct {
	// Schema is the schema with sfgen's functions (release 3 or later)
	// whose snowflake_lease_take() hands out the node; "" means "public".
	// Its layout is the lease's. (Release 4 keeps its lease table in a
	// private schema, such as public_sfgen, that no lease client can
	// reach; release 3 kept it in the schema.)
	Schema string
	// Holder names the lease's holder in the lease table; "" means the
	// host name and process id.
	Holder string
	// TTL is how long the lease lasts without a renewal, from 1 second to
	// 24 hours; 0 means DefaultLeaseTTL. The lease renews itself every
	// TTL/3 (counted from each answer). The lease of a holder that dies
	// (kill -9 included) expires a TTL after its last renewal; on release 4
	// its node is free again only a TTL after the database first saw that
	// lease expired (so at least two TTLs after the last renewal), so that a
	// step of the database's clock cannot give the node to another holder
	// while this one still counts it as its own. Release 3 frees it as soon
	// as the lease expires. A lease given back with Close frees its node at
	// once. A process clock ahead of the database's by more than about 2/3
	// TTL gets refusals from Next (see Next).
	TTL time.Duration
}

// A Lease is a node of a layout that a database lent this process for a
// time, and the generator of its IDs. TakeLease takes one; it renews
// itself in the background while the process lives, until Close. Its Next
// makes IDs like a Generator's, and is safe for any number of goroutines.
//
// A lease guarantees three things. In that database one maker at a time
// holds its node: no other lease or reservation (snowflake_lease_reserve(),
// for makers the database cannot see, such as other databases) holds it,
// in any schema of the database with sfgen's functions of the same layout
// (release 4; release 3 sees only the leases and reservations of the
// lease's own schema), nor does any such schema use it as its own node.
// Release 4 also refuses to give a leased node to a schema
// (snowflake_set_node(), a first install) or a reservation while the
// lease holds it. (The registry reads the lease tables that the schema's
// owner may read; `sfgen node --dsn` shows the rest.) Next stops,
// returning ErrLeaseLost, before the database could give the node to
// anyone else: it counts the TTL from before each renewal was sent, on
// the monotonic clock, and release 4 keeps the node a TTL more after the
// database first saw the lease expired, so a forward step of the
// database's clock does not give it to a second holder (on release 3 it
// can, for at most the TTL, the IDs still unique: docs/leases.md, "When
// clocks jump"). And every ID is dated from the lease's floor — above every ID of
// the node's earlier holders — to its high-water mark, which each renewal
// raises: a restarted process given the same node, even with its clock
// behind, never repeats an ID; while its clock is behind the floor, Next
// carries on above the floor without waiting.
//
// Every database call is one statement, and no session state is kept
// between calls, so leases work through a transaction-pooling pgbouncer
// (with a driver setting that does not rely on named prepared statements
// across transactions, such as pgx's default_query_exec_mode=exec, or
// pgbouncer 1.21's max_prepared_statements).
type Lease struct {
	db     *sql.DB
	schema string // quoted
	layout sfgen.Layout
	dc, m  int64
	token  int64
	ttl    time.Duration
	gen    *leasegen.Generator
	ahead  time.Duration // FloorAhead

	start    time.Time    // monotonic origin of deadline
	deadline atomic.Int64 // nanoseconds after start when the lease may have expired

	stop      chan struct{}
	done      chan struct{} // closed when the lease is lost or closed
	renewed   sync.WaitGroup
	closeOnce sync.Once
	mu        sync.Mutex
	err       error // why done was closed
	lastMs    int64 // when done was closed: the time of the last ID
}

// TakeLease asks the database behind db for a node of schema o.Schema's
// layout, and returns its lease. It fails with ErrNoFreeNode when none is
// free, and with ErrNoLeases when the schema's sfgen release has no
// leases. The connection's role needs EXECUTE on the schema's
// snowflake_lease_take(), snowflake_lease_renew() and
// snowflake_lease_release(), which only the owner has until it grants it.
func TakeLease(ctx context.Context, db *sql.DB, o LeaseOptions) (*Lease, error) {
	schema, err := catalog.ParseSchema(o.Schema)
	if err != nil {
		return nil, err
	}
	ttl := o.TTL
	if ttl == 0 {
		ttl = DefaultLeaseTTL
	}
	if ttl < time.Second || ttl > 24*time.Hour {
		return nil, fmt.Errorf("lease TTL %v is out of range [1s, 24h]: %w", ttl, sfgen.ErrOutOfRange)
	}
	holder := o.Holder
	if holder == "" {
		host, _ := os.Hostname()
		holder = fmt.Sprintf("%s pid %d", host, os.Getpid())
	}
	in, err := catalog.Inspect(ctx, catalog.DB(db), schema)
	if err != nil {
		return nil, fmt.Errorf("take a node lease: %w", err)
	}
	if in.Layout.IsZero() {
		return nil, fmt.Errorf("take a node lease: schema %s has no sfgen install: %w", schema, ErrNoLeases)
	}
	if !in.Has(catalog.FuncLeaseTake) {
		return nil, fmt.Errorf("take a node lease: schema %s is at sfgen release %d, before leases (release 3); upgrade it with sfgen install: %w",
			schema, in.Release, ErrNoLeases)
	}
	layout := in.Layout
	q := schema.Quoted()
	l := &Lease{db: db, schema: q, layout: layout, ttl: ttl, start: time.Now(),
		stop: make(chan struct{}), done: make(chan struct{})}
	sent := time.Since(l.start)
	var dc, m, token, floor, high sql.NullInt64
	var dbNow int64 // the database's clock after the take, Unix ms
	err = db.QueryRowContext(ctx, `SELECT t.datacenter_id, t.machine_id, t.token, t.floor_ms, t.high_water_ms,
		pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) OPERATOR(pg_catalog.*) 1000)::bigint
		FROM `+q+`.snowflake_lease_take($1::pg_catalog.text, $2::bigint) AS t`, holder, ttl.Milliseconds()).
		Scan(&dc, &m, &token, &floor, &high, &dbNow)
	if err != nil {
		// pgx's and lib/pq's errors say their SQLSTATE so.
		var state interface{ SQLState() string }
		if errors.As(err, &state) && state.SQLState() == sqlstate.NoFreeNode {
			return nil, fmt.Errorf("take a node lease in schema %s: %w: %w", schema, err, ErrNoFreeNode)
		}
		return nil, fmt.Errorf("take a node lease in schema %s: %w", schema, err)
	}
	if !dc.Valid {
		// Release 4: none free now, but the take saw expired leases whose
		// nodes are free a TTL from now (an error would have undone that).
		return nil, fmt.Errorf("take a node lease in schema %s: none is free now; the nodes of leases that expired are free again a TTL after the database first saw them expired: %w", schema, ErrNoFreeNode)
	}
	l.dc, l.m, l.token = dc.Int64, m.Int64, token.Int64
	l.ahead = max(time.Duration(floor.Int64-dbNow)*time.Millisecond, 0)
	l.deadline.Store(int64(sent + ttl - margin(ttl)))
	l.gen, err = leasegen.New(layout, l.dc, l.m, max(floor.Int64, layout.Epoch()), high.Int64)
	if err != nil {
		// The database's clock is outside the layout's range, or it
		// handed out a lease this sfgen cannot use: give it back.
		l.release(context.WithoutCancel(ctx), layout.Epoch()-1)
		return nil, fmt.Errorf("take a node lease in schema %s: node %d/%d: %w", schema, l.dc, l.m, err)
	}
	l.renewed.Add(1)
	go l.renew()
	return l, nil
}

// margin is how much earlier than the database a lease counts itself
// expired, for the difference between the two clocks' rates.
func margin(ttl time.Duration) time.Duration { return min(ttl/20, time.Second) }

// Datacenter returns the leased node's datacenter.
func (l *Lease) Datacenter() int64 { return l.dc }

// Machine returns the leased node's machine.
func (l *Lease) Machine() int64 { return l.m }

// Layout returns the layout of the lease's IDs: its schema's.
func (l *Lease) Layout() sfgen.Layout { return l.layout }

// FloorAhead returns how far the lease's floor, the earliest time its IDs
// may carry, was ahead of the database's clock when the lease was taken;
// 0 when it was not. A node's floor is above the last ID of its previous
// holder, so it is ahead only when that holder's clock ran ahead (or the
// database's clock stepped back): until the clock gets there, Next dates
// IDs from the floor, ahead of the clock, without waiting. Release 4
// gives a node whose floor is more than a second ahead only when no other
// node of the layout is free; a caller that must not date IDs ahead can
// wait FloorAhead before its first Next (the lease renews itself
// meanwhile), or Close the lease and try again later. sfgen next and the
// fleet check (sfgen node --dsn) report such nodes.
func (l *Lease) FloorAhead() time.Duration { return l.ahead }

// Next returns the next ID of the leased node. Its errors: ErrLeaseLost
// or ErrLeaseClosed (wrapped) once the lease is lost or closed; an error
// wrapping ErrOutOfRange when the next ID would be dated after the
// lease's high-water mark, which each take or renewal sets to the
// database's clock plus the TTL (or more): that is, when the process's
// clock is ahead of the database's by more than the TTL less the time
// since the database ran the last successful take or renewal. Renewals
// come TTL/3 after each answer, so a lead below two thirds of the TTL,
// less a renewal's round trip, is never refused while they are on time;
// a late renewal lowers that by its lateness (docs/leases.md, "How far
// the process's clock may be ahead of the database's"). Such a refusal
// does not end the lease: Next makes IDs again after the next renewal.
// And a Generator's errors.
func (l *Lease) Next() (sfgen.ID, error) {
	if time.Since(l.start) > time.Duration(l.deadline.Load()) {
		l.end(fmt.Errorf("node %d/%d: not renewed within its TTL of %v: %w", l.dc, l.m, l.ttl, ErrLeaseLost))
	}
	id, err := l.gen.Next()
	if errors.Is(err, leasegen.ErrBeyondLimit) {
		err = fmt.Errorf("%w (%w)", err, sfgen.ErrOutOfRange)
	}
	return id, err
}

// Done returns a channel that is closed when the lease is lost or closed;
// Err says which.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err returns nil while the lease holds, and then why it ended: an error
// wrapping ErrLeaseLost or ErrLeaseClosed.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Close stops the lease's renewals and Next, and gives the node back to
// the database at once, with the time of its last ID, so that its next
// holder starts above that rather than above the high-water mark: the
// node is free again at once. It returns an error only if the database
// could not be told; the lease then expires after its TTL, and (release
// 4) its node is free a TTL after the database first saw it expired.
func (l *Lease) Close(ctx context.Context) error {
	var err error
	l.closeOnce.Do(func() {
		lost := l.Err()
		l.end(fmt.Errorf("node %d/%d: %w", l.dc, l.m, ErrLeaseClosed))
		close(l.stop)
		l.renewed.Wait()
		if lost == nil {
			err = l.release(ctx, l.lastMs)
		}
	})
	return err
}

func (l *Lease) release(ctx context.Context, lastMs int64) error {
	_, err := l.db.ExecContext(ctx, `SELECT `+l.schema+
		`.snowflake_lease_release($1::integer, $2::integer, $3::bigint, $4::bigint)`, l.dc, l.m, l.token, lastMs)
	if err != nil {
		return fmt.Errorf("release node lease %d/%d: %w", l.dc, l.m, err)
	}
	return nil
}

func (l *Lease) end(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	l.err = err
	l.lastMs = l.gen.Stop(err)
	close(l.done)
}

// renew renews the lease every TTL/3 (sooner again after a failed try)
// until it is closed or lost.
func (l *Lease) renew() {
	defer l.renewed.Done()
	every := l.ttl / 3
	retry := max(l.ttl/30, 50*time.Millisecond)
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.done:
			return
		case <-t.C:
		}
		left := time.Duration(l.deadline.Load()) - time.Since(l.start)
		if left <= 0 {
			l.end(fmt.Errorf("node %d/%d: not renewed within its TTL of %v: %w", l.dc, l.m, l.ttl, ErrLeaseLost))
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), left)
		sent := time.Since(l.start)
		var expires sql.NullTime
		var high sql.NullInt64
		err := l.db.QueryRowContext(ctx, `SELECT expires_at, high_water_ms FROM `+l.schema+
			`.snowflake_lease_renew($1::integer, $2::integer, $3::bigint, $4::bigint)`,
			l.dc, l.m, l.token, l.ttl.Milliseconds()).Scan(&expires, &high)
		cancel()
		switch {
		case err != nil:
			// Unreachable for now: try again soon, until the deadline.
			t.Reset(retry)
		case !high.Valid:
			l.end(fmt.Errorf("node %d/%d: the database no longer holds this lease (expired or taken): %w", l.dc, l.m, ErrLeaseLost))
			return
		default:
			l.gen.SetLimit(high.Int64)
			l.deadline.Store(int64(sent + l.ttl - margin(l.ttl)))
			t.Reset(every)
		}
	}
}

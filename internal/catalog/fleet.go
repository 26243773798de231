package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgident"
)

// A FleetDatabase is one database of a fleet check and the schemas to
// read in it.
type FleetDatabase struct {
	// Name names the database in FleetTarget.Database and in messages:
	// user@host:port/database, never the password.
	Name    string
	Schemas []Schema
	// Redact says an error met reading the database as FleetTarget.Error
	// shows it (the command takes the password out); nil means
	// err.Error().
	Redact func(error) string
}

func (d FleetDatabase) say(err error) string {
	if d.Redact == nil {
		return err.Error()
	}
	return d.Redact(err)
}

// Unreadable returns the targets of d, each with err as its Error: a
// database that could not be reached at all.
func (d FleetDatabase) Unreadable(err error) []FleetTarget {
	out := d.targets()
	for i := range out {
		out[i].Error = d.say(err)
	}
	return out
}

func (d FleetDatabase) targets() []FleetTarget {
	out := make([]FleetTarget, len(d.Schemas))
	for i, s := range d.Schemas {
		out[i] = FleetTarget{Database: d.Name, Schema: s.Name()}
	}
	return out
}

// A FleetTarget is one database and schema of a fleet check: what it
// holds of sfgen, or why it could not be read. Its JSON is one of the
// targets of 'sfgen node --json'.
type FleetTarget struct {
	Database   string `json:"database"` // FleetDatabase.Name
	Schema     string `json:"schema"`
	Installed  bool   `json:"installed"` // sfgen's node is there to read
	NodeSet    bool   `json:"node_set"`  // and set (else snowflake_next_id() refuses to make IDs)
	Datacenter int64  `json:"datacenter"`
	Machine    int64  `json:"machine"`
	Layout     string `json:"layout,omitempty"` // a preset's name, or the spec (snowflake.Layout.Name)
	Release    int    `json:"release,omitempty"`
	SameAs     *int   `json:"same_as,omitempty"` // set by CompareFleet: an earlier target that is this very schema, reached again
	Error      string `json:"error,omitempty"`   // why it could not be read

	// Leases are the schema's leases and reservations that hold a node
	// (from release 4), and expired rows whose high-water mark is more
	// than FutureBoundMs ahead of the database's clock; LeasesError says
	// why they could not be read (this role may not read the table).
	Leases      []FleetLease `json:"leases,omitempty"`
	LeasesError string       `json:"leases_error,omitempty"`

	// CitusCopies is, on a Citus node, what Citus copied of the schema's
	// sfgen over the node's own (CitusCopies): its node is likely another
	// node's.
	CitusCopies []string `json:"citus_copies,omitempty"`

	// Lacks is, for a schema read without sfgen's node (Installed false,
	// no Error), the function it lacks: FuncLayout or FuncNode.
	Lacks string `json:"-"`

	layout snowflake.Layout
	key    string // the server, database and schema, to find the same one reached twice; "" when unknown
}

// fleetTarget is the target of what Inspect read (in) in the database
// called database, whose server, database and schema key names.
func fleetTarget(database, key string, in Installed) FleetTarget {
	t := FleetTarget{Database: database, Schema: in.Schema.Name(), key: key}
	if in.Layout.IsZero() {
		t.Lacks = FuncLayout
		return t
	}
	t.layout, t.Layout, t.Release = in.Layout, in.Layout.Name(), in.Release
	switch in.Node.State {
	case NoNodeFunction:
		t.Lacks = FuncNode
	case NodeUnset:
		t.Installed = true
	default:
		t.Installed, t.NodeSet = true, true
		t.Datacenter, t.Machine = in.Node.Datacenter, in.Node.Machine
	}
	return t
}

// A FleetLease is one row of a schema's lease table, as a fleet check
// reports it.
type FleetLease struct {
	Datacenter int64  `json:"datacenter"`
	Machine    int64  `json:"machine"`
	Kind       string `json:"kind"` // "lease" (it holds its node), "reservation", or "expired" (listed for its high-water mark)
	Holder     string `json:"holder"`
	// AheadMs is, for an expired row, how far its high-water mark, the
	// floor of the node's next holder, is ahead of the database's clock,
	// when more than FutureBoundMs; else 0.
	AheadMs int64 `json:"ahead_ms,omitempty"`
}

// FutureBoundMs is how far ahead of the database's clock a lease's
// high-water mark may be before a fleet check reports it: the bound of
// release 4's takes (sqlgen.LeaseFutureBound).
const FutureBoundMs = 1000

// A maker is a node that makes IDs in a layout. Two makers of one
// layout and one node make IDs that can collide.
type maker struct {
	layout              snowflake.Layout
	datacenter, machine int64
}

// makers returns the makers the target holds, each with what it is: its
// schema's node, when set, and the nodes its leases and reservations hold.
func (t FleetTarget) makers() ([]maker, []string) {
	if t.Error != "" {
		return nil, nil
	}
	var ms []maker
	var what []string
	if t.NodeSet {
		ms, what = append(ms, maker{t.layout, t.Datacenter, t.Machine}), append(what, "node")
	}
	for _, l := range t.Leases {
		if l.Kind != "expired" {
			ms, what = append(ms, maker{t.layout, l.Datacenter, l.Machine}), append(what, l.Kind+" of "+l.Holder)
		}
	}
	return ms, what
}

// A SharedNode is a pair of targets, A and B (indexes into
// FleetReport.Targets, A before B), that make IDs with one node in one
// layout.
type SharedNode struct {
	A          int    `json:"a"`
	B          int    `json:"b"`
	AMaker     string `json:"a_maker"` // which of A's makers: "node" (the schema's), "lease of HOLDER" or "reservation of HOLDER"
	BMaker     string `json:"b_maker"`
	Datacenter int64  `json:"datacenter"`
	Machine    int64  `json:"machine"`
	Layout     string `json:"layout"`
}

// A FleetReport is what CompareFleet found; its JSON is 'sfgen node
// --json'.
type FleetReport struct {
	OK      bool          `json:"ok"` // no pair shares a node and every target was read
	Targets []FleetTarget `json:"targets"`
	Shared  []SharedNode  `json:"shared"` // never nil
	Failed  int           `json:"-"`      // how many targets could not be read

	// Citus says the targets are the nodes of one Citus cluster
	// (CompareCitusFleet); Missing indexes those of them that were read
	// and cannot make IDs: no sfgen, or no node set.
	Citus   bool  `json:"citus,omitempty"`
	Missing []int `json:"missing,omitempty"`
	// Copied indexes, on a Citus cluster, the targets that hold what
	// Citus copied from another node over their own sfgen (CitusCopies):
	// their node is likely not their own, and a metadata sync copies
	// again what is still Citus's distributed object.
	Copied []int `json:"copied,omitempty"`
}

// ReadDatabase reads the node, layout and release of each of d's schemas
// through q, which should be one connection (not a pool), and which
// server and database q reaches, for CompareFleet to tell the same schema
// reached twice. An error reading which server it is gives every target
// that error; one inspecting a schema, that schema's target.
func ReadDatabase(ctx context.Context, q Querier, d FleetDatabase) []FleetTarget {
	key, err := readServer(ctx, q)
	if err != nil {
		return d.Unreadable(err)
	}
	out := d.targets()
	for i, s := range d.Schemas {
		in, err := Inspect(ctx, q, s)
		if err != nil {
			out[i].Error = d.say(err)
			continue
		}
		out[i] = fleetTarget(d.Name, key+" "+s.Name(), in)
		if in.Release > 0 {
			if out[i].CitusCopies, err = CitusCopies(ctx, q, s); err != nil {
				out[i].Error = d.say(err)
				continue
			}
		}
		if in.Release >= 4 {
			out[i].Leases, out[i].LeasesError = readLeases(ctx, q, s, d.say)
		}
	}
	return out
}

// readLeases reads the rows of schema's lease table that a fleet check
// reports (FleetLease), or says why it cannot.
func readLeases(ctx context.Context, q Querier, schema Schema, say func(error) string) ([]FleetLease, string) {
	private := PrivateSchema(schema.Name())
	var readable sql.NullBool
	readableSQL, err := render("leases_readable", nil)
	if err != nil {
		return nil, err.Error()
	}
	if err := q.QueryRow(ctx, readableSQL, private).Scan(&readable); err != nil {
		return nil, say(err)
	}
	if !readable.Valid {
		return nil, "there is no lease table " + private + ".snowflake_lease (release 4 and later create it; a copy of sfgen's functions without its tables, as Citus makes on its workers, lacks it)"
	}
	if !readable.Bool {
		return nil, "this role may not read " + private + ".snowflake_lease (its owner may)"
	}
	stmt, err := render("leases", struct{ Table string }{pgident.Quote(private) + ".snowflake_lease"})
	if err != nil {
		return nil, err.Error()
	}
	var rows string
	if err := q.QueryRow(ctx, stmt, int64(FutureBoundMs)).Scan(&rows); err != nil {
		return nil, say(err)
	}
	var out []FleetLease
	for _, line := range lines(rows) {
		f := strings.SplitN(line, "\t", 5)
		if len(f) != 5 {
			return nil, fmt.Sprintf("read %s.snowflake_lease: unexpected row %q", private, line)
		}
		l := FleetLease{Kind: f[2], Holder: f[4]}
		l.Datacenter, _ = strconv.ParseInt(f[0], 10, 64)
		l.Machine, _ = strconv.ParseInt(f[1], 10, 64)
		// A live lease's mark is its expiry, ahead by design; an expired
		// row's is the next holder's floor.
		if ahead, _ := strconv.ParseInt(f[3], 10, 64); l.Kind == "expired" && ahead > FutureBoundMs {
			l.AheadMs = ahead
		}
		out = append(out, l)
	}
	return out, ""
}

// readServer returns which server and database q reaches: the server's
// system identifier where this role may read it, the postmaster's start
// time and the database's oid. A clone or a restore is another database;
// a promoted physical copy, a server started at another time.
func readServer(ctx context.Context, q Querier) (string, error) {
	var server string
	var canControl bool
	if err := queryRow(ctx, q, "control_permitted", &canControl); err != nil {
		return "", err
	}
	if canControl {
		if err := queryRow(ctx, q, "system_identifier", &server); err != nil {
			return "", err
		}
	}
	var where string
	if err := queryRow(ctx, q, "database", &where); err != nil {
		return "", err
	}
	return server + " " + where, nil
}

// queryRow runs the statement called name, which takes no arguments, and
// scans its row into dest.
func queryRow(ctx context.Context, q Querier, name string, dest ...any) error {
	stmt, err := render(name, nil)
	if err != nil {
		return err
	}
	return q.QueryRow(ctx, stmt).Scan(dest...)
}

// CompareFleet compares the targets of a fleet check: a target that is a
// schema an earlier one already reached (the same server, database and
// schema) gets SameAs and is not compared; every other pair that makes
// IDs with one node in one layout is Shared. Targets of different layouts
// are never compared, each layout being its own ID space, nor those
// without a node set. targets is not changed.
func CompareFleet(targets []FleetTarget) FleetReport {
	r := FleetReport{Targets: append([]FleetTarget(nil), targets...), Shared: []SharedNode{}}
	seen := map[string]int{}
	for i := range r.Targets {
		t := &r.Targets[i]
		if t.Error != "" {
			r.Failed++
			continue
		}
		if t.key == "" {
			continue
		}
		if j, ok := seen[t.key]; ok {
			t.SameAs = &j
			continue
		}
		seen[t.key] = i
	}
	for i, a := range r.Targets {
		if a.SameAs != nil {
			continue
		}
		for j := i + 1; j < len(r.Targets); j++ {
			b := r.Targets[j]
			if b.SameAs != nil {
				continue
			}
			ams, awhat := a.makers()
			bms, bwhat := b.makers()
			for x, ma := range ams {
				for y, mb := range bms {
					if ma == mb {
						r.Shared = append(r.Shared, SharedNode{A: i, B: j, AMaker: awhat[x], BMaker: bwhat[y],
							Datacenter: ma.datacenter, Machine: ma.machine, Layout: ma.layout.Name()})
					}
				}
			}
		}
	}
	r.OK = len(r.Shared) == 0 && r.Failed == 0
	return r
}

// An AheadLease is an expired lease row whose high-water mark, the floor
// of its node's next holder, is more than FutureBoundMs ahead of the
// database's clock: that holder's IDs would be dated that far ahead.
type AheadLease struct {
	Schema string `json:"schema"`
	FleetLease
}

// AheadLeases reads, in the database q reaches, every trusted schema of
// layout l whose lease table (release 4 and later) this role may read, and
// returns its AheadLease rows; unread says, for each schema with sfgen's
// leases that this role may not read (its layout unknown, then), or whose
// lease table it may not read, why. A schema Inspect finds untrusted is
// passed over, its functions not called: the fleet check reports it.
func AheadLeases(ctx context.Context, q Querier, l snowflake.Layout) (ahead []AheadLease, unread []string, err error) {
	var names string
	if err := queryRow(ctx, q, "lease_schemas", &names); err != nil {
		return nil, nil, fmt.Errorf("list the schemas with leases: %w", err)
	}
	var list []string
	if err := json.Unmarshal([]byte(names), &list); err != nil {
		return nil, nil, fmt.Errorf("list the schemas with leases: %w", err)
	}
	for _, name := range list {
		s, err := ParseSchema(name)
		if err != nil {
			continue // a name sfgen never installs into
		}
		in, err := Inspect(ctx, q, s)
		switch {
		case errors.Is(err, ErrUntrusted):
			continue
		case err != nil:
			unread = append(unread, fmt.Sprintf("schema %s: %v", s, err))
			continue
		case in.Layout != l || in.Release < 4:
			continue
		}
		leases, why := readLeases(ctx, q, s, func(err error) string { return err.Error() })
		if why != "" {
			unread = append(unread, fmt.Sprintf("schema %s: %s", s, why))
		}
		for _, fl := range leases {
			if fl.AheadMs > 0 {
				ahead = append(ahead, AheadLease{Schema: s.Name(), FleetLease: fl})
			}
		}
	}
	return ahead, unread, nil
}

package sqlgen

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/idkit"
	"github.com/sfgen/sfgen/internal/pgident"
)

// Options say what to render.
type Options struct {
	// Layout is the ID layout, and Schema the schema the objects are
	// created in: together the catalog.Target rendered for, so the zero
	// Layout is an error wrapping snowflake.ErrZeroLayout and "" means
	// catalog.Public.
	Layout snowflake.Layout
	Schema string
	// Datacenter and Machine are the node that snowflake_next_id() uses
	// until `sfgen node` changes it; each from 0 to the layout's maximum.
	// An install or upgrade keeps the node a schema already has.
	Datacenter, Machine int64
	// UnsetNode, from release 3 on, renders a first install without a
	// node: it takes one from the installing session's settings
	// sfgen.datacenter and sfgen.machine when both are set, and otherwise
	// leaves it unset, so that snowflake_next_id() refuses (SQLSTATE
	// SF201, naming the fix) until `sfgen node` sets one. Datacenter and
	// Machine must then be 0. Releases 1 and 2 always set Datacenter and
	// Machine.
	UnsetNode bool
}

// Latest is the newest release of sfgen's SQL: what Script, Migration and
// the last of Migrations install. Releases are numbered from 1; a
// released file never changes, and every change to the SQL is a new
// release with a migration from the one before.
const Latest = catalog.Latest

// ErrNodeAndUnset is returned for Options that name a node and ask for
// none (UnsetNode).
var ErrNodeAndUnset = errors.New("options both set a node and leave it unset")

//go:embed templates/*.sql.tmpl
var templateFS embed.FS

var funcs = template.FuncMap{
	"literal": pgident.QuoteLiteral,
	"ident":   pgident.Quote,
	// op writes an operator bound to pg_catalog's, whatever search_path.
	"op": func(name string) string { return "OPERATOR(pg_catalog." + name + ")" },
	// outOfRange is the argument of raise.sql.tmpl's raise_out_of_range.
	"outOfRange": func(message, arg string) outOfRange { return outOfRange{message, arg} },
	// idMaking is the argument of grant.sql.tmpl's id_making_privileges.
	"idMaking": func(schema string, grant bool) idMaking { return idMaking{schema, grant} },
	// list is its arguments, to range over.
	"list": func(s ...string) []string { return s },
	// nodeBits is the argument of next_id.sql.tmpl's replace_node_bits.
	"nodeBits": func(d *templateData, bits string) nodeBits { return nodeBits{d, bits} },
}

// A nodeBits is what replace_node_bits writes: d's schema's
// snowflake_node_bits() returning the PL/pgSQL expression Bits.
type nodeBits struct {
	Data *templateData
	Bits string
}

// An idMaking is what id_making_privileges grants (Grant) or revokes: the
// privileges of schema Schema's (quoted) protocol objects.
type idMaking struct {
	Schema string
	Grant  bool
}

// An outOfRange is what a range check's RAISE says: Message, a format()
// string with one %s, shows Arg, an SQL expression.
type outOfRange struct{ Message, Arg string }

// templates is the one template tree, the latest release's.
var templates = template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.sql.tmpl"))

// Script renders the plain install script of the latest release. It runs
// as one transaction; on a database that sfgen installed into before, at
// any release, it upgrades the install in place and keeps its node and
// state, so `psql -f` works on a fresh database and on any earlier one.
func Script(o Options) ([]byte, error) { return render(o, "script.sql.tmpl", false) }

// Migration renders one goose migration that installs the latest release,
// for an application's migrations directory that has no sfgen migration
// yet. Its Up section also upgrades an earlier install in place; its Down
// section removes what it installs (but not the schema, which may hold
// other objects).
func Migration(o Options) ([]byte, error) { return render(o, "install.sql.tmpl", true) }

// Upgrade renders the goose migration that takes a schema at any earlier
// release to the latest: its Up section is the latest release's, which
// upgrades in place whatever release it finds, node and state kept. It
// cannot be undone: its Down section fails, saying so (docs/releases.md
// has why). An upgrade keeps the node the schema has, so o's node is not
// used (and must still be in range).
func Upgrade(o Options) ([]byte, error) {
	if _, err := newTemplateData(o, true); err != nil {
		return nil, err
	}
	o.Datacenter, o.Machine, o.UnsetNode = 0, 0, false
	return render(o, "upgrade.sql.tmpl", true)
}

// Sections are a migration of the latest release for a migration tool
// other than goose, without any tool's annotations: the comment block
// that heads it (what `sfgen migration` reads back: Release, Schema and
// Layout lines), the SQL that migrates up and the SQL that migrates down.
// Up carries no transaction control of its own and begins with a guard
// that refuses, changing nothing, unless it runs in one transaction (the
// tool's); Down runs in one transaction too.
type Sections struct {
	Header, Up, Down []byte
}

// InstallSections renders the sections of the migration Migration
// renders for goose: Up installs the latest release (or upgrades an
// earlier install in place), Down removes what it installed.
func InstallSections(o Options) (Sections, error) {
	return sections(o, false)
}

// UpgradeSections renders the sections of the migration Upgrade renders
// for goose: Up takes a schema at any earlier release to the latest, and
// Down fails, saying that it cannot be undone. o's node is not used.
func UpgradeSections(o Options) (Sections, error) {
	if _, err := newTemplateData(o, true); err != nil {
		return Sections{}, err
	}
	o.Datacenter, o.Machine, o.UnsetNode = 0, 0, false
	return sections(o, true)
}

// sections renders an install's sections, or with upgrade an upgrade's.
func sections(o Options, upgrade bool) (Sections, error) {
	d, err := newTemplateData(o, false)
	if err != nil {
		return Sections{}, err
	}
	d.Upgrade = upgrade
	header, down := []string{"header"}, "install_down"
	if upgrade {
		header, down = []string{"header", "upgrade_note"}, "upgrade_down"
	}
	part := func(names ...string) ([]byte, error) {
		var b bytes.Buffer
		for _, n := range names {
			if err := templates.ExecuteTemplate(&b, n, d); err != nil {
				return nil, fmt.Errorf("render sql: %w", err)
			}
			b.WriteString("\n")
		}
		return tidy(b.Bytes()), nil
	}
	var s Sections
	if s.Header, err = part(header...); err != nil {
		return Sections{}, err
	}
	if s.Up, err = part("plain_up"); err != nil {
		return Sections{}, err
	}
	if s.Down, err = part("transaction_guard", down); err != nil {
		return Sections{}, err
	}
	return s, nil
}

// Generator renders the latest release's SQL snowflake_next_id(), with
// the sequences and functions it uses, as its migrations create them, for
// a goose migration's section: run over a schema at the latest release,
// it puts the SQL generator back in place of the native one, node and
// state kept.
func Generator(o Options) ([]byte, error) {
	if _, err := newTemplateData(o, true); err != nil {
		return nil, err
	}
	o.Datacenter, o.Machine, o.UnsetNode = 0, 0, false
	s, err := renderParts(o, true, "next_id_up")
	if err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// NextIDExpression renders the latest release's SQL snowflake_next_id()
// as the one expression its body is, for a column default: on a schema
// at a release of the same state protocol (2 to Latest) whose
// snowflake_next_id() is the native generator, it is the SQL generator
// beside it, on the same state (sfgen bench measures the two so). It
// calls the schema's snowflake_next_state() and snowflake_node_bits().
func NextIDExpression(o Options) (string, error) {
	o.Datacenter, o.Machine, o.UnsetNode = 0, 0, false
	s, err := renderParts(o, false, "next_id_expression")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(s), nil
}

// A File is one goose migration of sfgen's release line.
type File struct {
	Name    string // the file name goose reads the version from: 00002_sfgen_release_2.sql
	Release int    // the release a schema is at once this file is applied
	SQL     []byte
}

// Up returns the file's Up section as plain SQL, without goose's
// annotations: what goose runs for it, in one transaction, for psql or a
// test to run without goose.
func (f File) Up() string {
	_, up, _ := strings.Cut(string(f.SQL), "-- +goose Up\n")
	up, _, _ = strings.Cut(up, "-- +goose Down\n")
	return strings.NewReplacer("-- +goose StatementBegin\n", "", "-- +goose StatementEnd\n", "").Replace(up)
}

// MigrationName is the file name of release r's migration in sfgen's own
// release line (migrations.FS and `sfgen install`): 00001_sfgen_snowflake.sql
// for release 1, 0000r_sfgen_release_r.sql after it.
func MigrationName(r int) string {
	if r == 1 {
		return "00001_sfgen_snowflake.sql"
	}
	return fmt.Sprintf("%05d_sfgen_release_%d.sql", r, r)
}

// The timing of snowflake_next_id()'s catch-ups (see next_id.sql.tmpl).
// A catch-up is a PL/pgSQL call under a lock; how often one is due sets
// both its cost and how far the IDs' time trails the clock, which
// LagLimit bounds. docs/generator.md has the measurements behind these
// values; release 1 has the same ones, frozen.
const (
	// CatchUpAfter is the age of the last catch-up from which a call may
	// take the slow path and catch up.
	CatchUpAfter = 6 * time.Millisecond
	// StaleAfter is the age from which every call takes the slow path in
	// releases 2 to 5 (and in the native generator), which send calls
	// there with a chance that grows from 0 at CatchUpAfter.
	StaleAfter = 8 * time.Millisecond
	// CatchUpDue is, from release 6, the age from which every call of the
	// SQL generator takes the slow path: the middle of releases 2 to 5's
	// spread, so catch-ups come as often, without random() in the fast
	// path.
	CatchUpDue = 7 * time.Millisecond
	// LagLimit is how far behind the clock the slow path still uses the
	// state; further behind, it waits for a catch-up.
	LagLimit = 9 * time.Millisecond
	// CatchUpLockWait bounds how long a call that finds the state far
	// behind the clock waits for the catch-up lock before it uses the
	// state as it is (unique, but dated late): a catch-up holds the lock
	// for microseconds, so only a lock queue another role keeps blocked
	// makes it wait that long.
	CatchUpLockWait = 50 * time.Millisecond
	// LeaseFutureBound is how far ahead of the database's clock the
	// high-water mark of an expired lease's node may be before a take
	// (from release 4) offers that node only when no other is free: its
	// next holder's IDs would be dated that far in the future.
	LeaseFutureBound = time.Second
	// LockWait bounds how long an upgrade from release 1 waits for release
	// 1's catch-up lock before it gives up, naming the session holding it.
	LockWait = 5 * time.Second
)

// The catch-up's turn, from release 7 (turn.sql.tmpl): a catch-up runs
// only while its session holds the current turn's row, one of
// CatchUpTurns, and then passes the turn on to a row no transaction in
// progress holds, of CatchUpTurnTries tried at random. A call that finds
// another session at it tries again at once CatchUpTurnSpins times, then
// every millisecond. A transaction keeps each row it took a turn on until
// it ends, so the rows are many: only a transaction that took thousands
// of turns (a catch-up is due every 7 ms) and stays open can hold most.
const (
	CatchUpTurns     = 16384
	CatchUpTurnTries = 8
	CatchUpTurnSpins = 10
)

// NodeUnsetRecentXids is how recently, in transactions of the whole
// server, the generator's state must have been made for release 5's
// upgrade to unset a 0/0 node nobody chose: a fresh database migrated in
// one run, not one that has made IDs for a while.
const NodeUnsetRecentXids = 10000

// templateData is what the templates see. Every field is derived from the
// layout, the node numbers or the validated schema name.
type templateData struct {
	Release        int    // the release being rendered: Latest
	Generated      string // ends every comment: "Generated by sfgen release 7."
	Upgrade        bool   // rendering an upgrade migration
	StatementBegin string // "-- +goose StatementBegin\n" in a migration, else ""
	StatementEnd   string // "-- +goose StatementEnd\n" in a migration, else ""

	SchemaName string // the schema, unquoted: public
	Schema     string // the schema as a quoted identifier: "public"
	Layout     string // the layout's String(), for snowflake_layout()
	EpochTime  string // the epoch as RFC 3339 UTC

	Epoch, MaxTimestamp                           int64
	TimestampShift, DatacenterShift, MachineShift uint
	TimestampBits, DatacenterBits, MachineBits    uint
	SequenceBits                                  uint
	MaxDatacenter, MaxMachine, MaxSequence, MaxID int64
	LowBitsMask                                   int64 // the datacenter, machine and sequence bits all set: 4194303
	Datacenter, Machine                           int64
	TimestampError, DatacenterError, MachineError string // format() strings for range errors
	SequenceError, IDError                        string
	// From release 8: the digits of the ID's string forms, in order, as
	// Go writes them (snowflake.Base32, snowflake.Base58).
	Base32Digits, Base58Digits string

	// For snowflake_next_id(), whose state is (unix_ms << SequenceBits) | sequence.
	NodeSet   bool  // a first install sets the node Datacenter, Machine (else: the session's settings, or unset)
	NodeSpace int64 // how many nodes the layout has: (MaxDatacenter+1) * (MaxMachine+1)
	NodeBits  uint  // DatacenterBits + MachineBits
	// From release 6: the state's low StateBits bits (64 - NodeBits) hold
	// all of an ID's but the node's, which go in at StateNodeFrom
	// (StateBits - SequenceBits + 1), 1-based.
	StateBits, StateNodeFrom uint
	MinState                 int64 // Epoch << SequenceBits: the state of the first ID
	MaxState                 int64 // (MaxTimestamp << SequenceBits) | MaxSequence: the state of the last ID

	// When snowflake_next_id() catches up with the clock, in milliseconds
	// since the last catch-up: due from CatchUpMs (one call in a few takes
	// the slow path, more as it ages), on every call from StaleMs; the slow
	// path waits for a catch-up rather than use a state more than LagLimitMs
	// behind the clock.
	CatchUpMs, StaleMs, LagLimitMs int64
	DueMs                          int64 // from release 6: CatchUpDue
	// From release 8 the guard holds the fast path's deadline, the last
	// catch-up's millisecond + DueMs; a catch-up is due CatchUpMs after
	// the last, when the deadline is at most DueAheadMs (DueMs -
	// CatchUpMs) ahead of the clock.
	DueAheadMs int64

	// For the preflight and the step between releases.
	KnownFunctions, KnownFunctionNames []string
	LeaseFunctionNames                 []string // the names new in release 3 (and, from release 4, its registry's): sfgen's only with its marker
	// From release 4: the private schema of the leases, quoted and as a name.
	Private, PrivateName string
	CitusFence           string // catalog.CitusFence
	NodeBitsText         string // catalog.NodeBitsText
	NodeBitsFenced       string // catalog.NodeBitsFenced
	// From release 4: how far ahead of the database's clock an expired
	// node's high-water mark may be before a take offers it last.
	LeaseFutureMs int64
	// From release 5: NodeUnsetRecentXids.
	NodeUnsetRecentXids int64
	MarkedFunctions     []string
	LockWaitSeconds     int64
	LockWaitMs          int64 // CatchUpLockWait
	// From release 7: CatchUpTurns (and the last row's slot),
	// CatchUpTurnTries, CatchUpTurnSpins.
	TurnSlots, TurnSlotsMax, TurnTries, TurnSpins int64
}

func newTemplateData(o Options, goose bool) (*templateData, error) {
	target, err := catalog.NewTarget(o.Schema, o.Layout)
	if err != nil {
		return nil, fmt.Errorf("render sql: %w", err)
	}
	l, schema := target.Layout(), target.Schema().Name()
	if o.UnsetNode && (o.Datacenter != 0 || o.Machine != 0) {
		return nil, fmt.Errorf("render sql: a node (%d/%d) and UnsetNode: %w", o.Datacenter, o.Machine, ErrNodeAndUnset)
	}
	for _, n := range []struct {
		f snowflake.Field
		v int64
	}{{snowflake.FieldDatacenter, o.Datacenter}, {snowflake.FieldMachine, o.Machine}} {
		if n.v < 0 || n.v > l.Max(n.f) {
			return nil, &snowflake.RangeError{Field: n.f, Value: n.v, Min: 0, Max: l.Max(n.f)}
		}
	}
	msg := func(f snowflake.Field) string {
		// The same words as the Go error, with %s where format() puts the value.
		return idkit.RangeMessage(f, "%s", l.Min(f), l.Max(f))
	}
	d := &templateData{
		Release:    Latest,
		Generated:  catalog.ReleaseMarker(Latest),
		SchemaName: schema,
		Schema:     pgident.Quote(schema),
		Layout:     l.String(),
		EpochTime:  l.MinTime().Format("2006-01-02T15:04:05.000Z07:00"),

		Epoch:           l.Epoch(),
		MaxTimestamp:    l.Max(snowflake.FieldTimestamp),
		TimestampShift:  l.Shift(snowflake.FieldTimestamp),
		DatacenterShift: l.Shift(snowflake.FieldDatacenter),
		MachineShift:    l.Shift(snowflake.FieldMachine),
		TimestampBits:   l.Bits(snowflake.FieldTimestamp),
		DatacenterBits:  l.Bits(snowflake.FieldDatacenter),
		MachineBits:     l.Bits(snowflake.FieldMachine),
		SequenceBits:    l.Bits(snowflake.FieldSequence),
		MaxDatacenter:   l.Max(snowflake.FieldDatacenter),
		MaxMachine:      l.Max(snowflake.FieldMachine),
		MaxSequence:     l.Max(snowflake.FieldSequence),
		MaxID:           l.Max(snowflake.FieldID),
		LowBitsMask:     1<<l.Shift(snowflake.FieldTimestamp) - 1,
		Datacenter:      o.Datacenter,
		Machine:         o.Machine,

		TimestampError:  msg(snowflake.FieldTimestamp),
		DatacenterError: msg(snowflake.FieldDatacenter),
		MachineError:    msg(snowflake.FieldMachine),
		SequenceError:   msg(snowflake.FieldSequence),
		IDError:         msg(snowflake.FieldID),
		Base32Digits:    digits(snowflake.Base32, 32),
		Base58Digits:    digits(snowflake.Base58, 58),

		NodeSet:       !o.UnsetNode,
		NodeSpace:     (l.Max(snowflake.FieldDatacenter) + 1) * (l.Max(snowflake.FieldMachine) + 1),
		NodeBits:      l.Bits(snowflake.FieldDatacenter) + l.Bits(snowflake.FieldMachine),
		StateBits:     64 - l.Bits(snowflake.FieldDatacenter) - l.Bits(snowflake.FieldMachine),
		StateNodeFrom: 65 - l.Bits(snowflake.FieldDatacenter) - l.Bits(snowflake.FieldMachine) - l.Bits(snowflake.FieldSequence),
		MinState:      l.Epoch() << l.Bits(snowflake.FieldSequence),
		MaxState:      l.Max(snowflake.FieldTimestamp)<<l.Bits(snowflake.FieldSequence) | l.Max(snowflake.FieldSequence),

		CatchUpMs: CatchUpAfter.Milliseconds(), StaleMs: StaleAfter.Milliseconds(),
		LagLimitMs: LagLimit.Milliseconds(),
		DueMs:      CatchUpDue.Milliseconds(),
		DueAheadMs: (CatchUpDue - CatchUpAfter).Milliseconds(),

		KnownFunctions: catalog.KnownFunctions, KnownFunctionNames: catalog.KnownFunctionNames, MarkedFunctions: catalog.MarkedFunctions,
		LeaseFunctionNames:  catalog.LeaseFunctionNames,
		CitusFence:          catalog.CitusFence,
		NodeBitsText:        catalog.NodeBitsText,
		NodeBitsFenced:      catalog.NodeBitsFenced,
		LockWaitSeconds:     int64(LockWait / time.Second),
		LockWaitMs:          CatchUpLockWait.Milliseconds(),
		LeaseFutureMs:       LeaseFutureBound.Milliseconds(),
		NodeUnsetRecentXids: NodeUnsetRecentXids,
		TurnSlots:           CatchUpTurns,
		TurnSlotsMax:        CatchUpTurns - 1,
		TurnTries:           CatchUpTurnTries,
		TurnSpins:           CatchUpTurnSpins,
	}
	// Names new since release 3 are sfgen's only with their release's
	// marker.
	d.LeaseFunctionNames = slices.Concat(catalog.LeaseFunctionNames, catalog.RegistryFunctionNames, catalog.LocalIDFunctionNames, catalog.GrantFunctionNames, catalog.TextFunctionNames)
	d.PrivateName = catalog.PrivateSchema(schema)
	d.Private = pgident.Quote(d.PrivateName)
	if goose {
		d.StatementBegin = "-- +goose StatementBegin\n"
		d.StatementEnd = "-- +goose StatementEnd\n"
	}
	return d, nil
}

// digits are the first n digits of encoding e, in order, as Go writes
// the IDs 0 to n-1 (their last character).
func digits(e snowflake.Encoding, n int) string {
	var b strings.Builder
	for i := range n {
		s, _ := snowflake.ID(i).Encode(e)
		b.WriteByte(s[len(s)-1])
	}
	return b.String()
}

func render(o Options, name string, goose bool) ([]byte, error) {
	d, err := newTemplateData(o, goose)
	if err != nil {
		return nil, err
	}
	d.Upgrade = name == "upgrade.sql.tmpl"
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, d); err != nil {
		return nil, fmt.Errorf("render sql: %w", err)
	}
	return tidy(b.Bytes()), nil
}

// renderParts renders the named templates of a release one after another,
// as the body of a larger file.
func renderParts(o Options, goose bool, names ...string) (string, error) {
	d, err := newTemplateData(o, goose)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	for _, n := range names {
		if err := templates.ExecuteTemplate(&b, n, d); err != nil {
			return "", fmt.Errorf("render sql: %w", err)
		}
		b.WriteString("\n\n")
	}
	return strings.TrimRight(string(tidy(b.Bytes())), "\n"), nil
}

// tidy trims trailing spaces and folds runs of blank lines, so that the
// templates can be laid out for reading without that showing in the SQL.
func tidy(b []byte) []byte {
	lines := strings.Split(string(b), "\n")
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" && (len(out) == 0 || out[len(out)-1] == "") {
			continue
		}
		out = append(out, l)
	}
	return []byte(strings.TrimRight(strings.Join(out, "\n"), "\n") + "\n")
}

// FirstNode renders, for a schema that the release line is about to
// install into for the first time, the statements that give it the node
// that the latest release's own first install would: o's, or with
// UnsetNode the installing session's settings sfgen.datacenter and
// sfgen.machine, or none. The release line starts with release 1, which
// sets a node (0/0 unless told otherwise) only where snowflake_node_bits()
// does not exist yet, so run this first, in a transaction; it does
// nothing where the function exists.
func FirstNode(o Options) ([]byte, error) {
	return render(o, "first_node.sql.tmpl", false)
}

// Preflight renders the checks the latest release makes before it
// installs or upgrades anything (see preflight.sql.tmpl), alone, for a
// caller that applies older releases first: run it in a transaction and
// roll that back. It raises SQLSTATE SF101 for objects under sfgen's
// names that sfgen did not create as the current role, SF102 for an
// install of another layout, SF103 for a newer release and SF104 for a
// schema another role owns.
func Preflight(o Options) ([]byte, error) { return render(o, "preflight.sql.tmpl", false) }

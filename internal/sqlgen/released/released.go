// Package released renders sfgen's SQL releases 1 to 7 exactly as they
// shipped, for any schema, layout and node, from the templates each
// release shipped with, frozen under templates/. Only tests import it:
// they install an older release to test what the current one does over
// it (an upgrade, a statement planned before it, a mix of releases).
// sfgen itself renders only the latest release (package sqlgen).
//
// Nothing here changes, ever: TestFrozen pins every template file by
// SHA-256, and package migrations checks that these templates still
// render its released files byte for byte. A new release freezes the
// release before it by copying the current tree here (see
// CONTRIBUTING.md, "Releasing SQL").
package released

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"text/template"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/idkit"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// Last is the newest release frozen here.
const Last = 7

// Options are sqlgen's.
type Options = sqlgen.Options

// ErrUnknownRelease is returned for a release that is not frozen here.
var ErrUnknownRelease = errors.New("no such frozen sfgen release")

//go:embed templates
var templateFS embed.FS

var funcs = template.FuncMap{
	"literal":    pgident.QuoteLiteral,
	"ident":      pgident.Quote,
	"op":         func(name string) string { return "OPERATOR(pg_catalog." + name + ")" },
	"outOfRange": func(message, arg string) outOfRange { return outOfRange{message, arg} },
}

type outOfRange struct{ Message, Arg string }

// releaseTemplates holds each release's templates, parsed apart: they
// define the same names. See releaseFiles for which files each has.
var releaseTemplates = func() (sets [Last + 1]*template.Template) {
	for r := 1; r <= Last; r++ {
		sets[r] = template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, releaseFiles(r)...))
	}
	return sets
}()

// releaseFiles are the template files release r is rendered from: shared's,
// then, for each file name, the newest copy in templates/release2 to
// templates/release<r>. So a release's folder holds only the files whose
// rendered output it changes, whole, and inherits the others from the
// release before (doc.go has the rule). Release 1 stands alone: release 2
// rewrote all of its files.
func releaseFiles(r int) []string {
	first := 2
	if r == 1 {
		first = 1
	}
	newest := map[string]string{} // file name -> its path in the newest folder that has it
	for from := first; from <= r; from++ {
		paths, err := fs.Glob(templateFS, fmt.Sprintf("templates/release%d/*.sql.tmpl", from))
		if err == nil && len(paths) == 0 {
			err = errors.New("no templates: every release changes something (is its folder in the go:embed line?)")
		}
		if err != nil {
			panic(fmt.Sprintf("released: release %d: %v", from, err))
		}
		for _, p := range paths {
			newest[path.Base(p)] = p
		}
	}
	files := []string{"templates/shared/*.sql.tmpl"}
	for _, name := range slices.Sorted(maps.Keys(newest)) {
		files = append(files, newest[name])
	}
	return files
}

// Script renders the plain install script of release, 1 to Last, as
// that release shipped it; for sqlgen.Latest, when it is later than Last,
// the current tree's (sqlgen.Script), so that a test can walk every
// release up to the latest.
func Script(o Options, release int) ([]byte, error) {
	switch {
	case release == sqlgen.Latest && release > Last:
		return sqlgen.Script(o)
	case release == 1:
		return render(o, 1, "snowflake.sql.tmpl", false)
	case release >= 2 && release <= Last:
		return render(o, release, "script.sql.tmpl", false)
	}
	return nil, fmt.Errorf("script for release %d: %w", release, ErrUnknownRelease)
}

// Upgrade renders the goose migration of sfgen's release line that took a
// schema from release to-1 to release to (2 to Last); its Down section
// puts the earlier release back.
func Upgrade(o Options, to int) ([]byte, error) {
	if to < 2 || to > Last {
		return nil, fmt.Errorf("upgrade to release %d: %w", to, ErrUnknownRelease)
	}
	if _, err := newTemplateData(o, to, true); err != nil {
		return nil, err
	}
	o.Datacenter, o.Machine, o.UnsetNode = 0, 0, false
	parts := []string{"compose_up", "range_up", "next_id_up"}
	if to-1 >= 3 {
		parts = append(parts, "lease_up") // release 4 changed release 3's leases
	}
	prev, err := renderParts(o, to-1, true, parts...)
	if err != nil {
		return nil, err
	}
	return renderWith(o, to, "upgrade.sql.tmpl", true, func(d *templateData) { d.PreviousUp = prev })
}

// Generator renders release's SQL snowflake_next_id(), with the sequences
// and functions it uses, as that release's migrations created them (2 to
// Last).
func Generator(o Options, release int) ([]byte, error) {
	if release == sqlgen.Latest && release > Last {
		return sqlgen.Generator(o)
	}
	if release < 2 || release > Last {
		return nil, fmt.Errorf("the SQL generator of release %d: %w", release, ErrUnknownRelease)
	}
	if _, err := newTemplateData(o, release, true); err != nil {
		return nil, err
	}
	o.Datacenter, o.Machine, o.UnsetNode = 0, 0, false
	s, err := renderParts(o, release, true, "next_id_up")
	if err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// Migrations renders the release line as migrations.FS carries it, one
// goose file a release: 00001_sfgen_snowflake.sql installs release 1, and
// each later file upgrades the one before, as sfgen shipped them up to
// release Last; then, when sqlgen.Latest is later, the current tree's
// upgrade (sqlgen.Upgrade) as sqlgen.Latest's file. For the Twitter layout
// in schema public with node 0/0 they are migrations.FS.
func Migrations(o Options) ([]sqlgen.File, error) {
	first, err := render(o, 1, "snowflake.sql.tmpl", true)
	if err != nil {
		return nil, err
	}
	files := []sqlgen.File{{Name: sqlgen.MigrationName(1), Release: 1, SQL: first}}
	for r := 2; r <= Last; r++ {
		up, err := Upgrade(o, r)
		if err != nil {
			return nil, err
		}
		files = append(files, sqlgen.File{Name: sqlgen.MigrationName(r), Release: r, SQL: up})
	}
	if sqlgen.Latest > Last {
		up, err := sqlgen.Upgrade(o)
		if err != nil {
			return nil, err
		}
		files = append(files, sqlgen.File{Name: sqlgen.MigrationName(sqlgen.Latest), Release: sqlgen.Latest, SQL: up})
	}
	return files, nil
}

// The timing and sizes that releases 1 to 7 shipped with (sqlgen's
// constants of the same names, as they were).
const (
	catchUpAfterMs, staleAfterMs, catchUpDueMs, lagLimitMs = 6, 8, 7, 9
	catchUpLockWaitMs                                      = 50
	leaseFutureBoundMs                                     = 1000
	lockWaitSeconds                                        = 5
	catchUpTurns, catchUpTurnTries, catchUpTurnSpins       = 16384, 8, 10
	nodeUnsetRecentXids                                    = 10000
)

// The function lists each release's files carry (catalog's, as they were).
var (
	knownFunctions2 = []string{
		"snowflake_layout()", "snowflake_release()",
		"snowflake_compose(bigint, integer, integer, integer)",
		"snowflake_decompose(bigint)", "snowflake_timestamp(bigint)",
		"snowflake_first_id(pg_catalog.timestamptz)", "snowflake_last_id(pg_catalog.timestamptz)",
		"snowflake_set_node(integer, integer)", "snowflake_node()", "snowflake_node_bits()",
		"snowflake_next_id()", "snowflake_next_id_slow()", "snowflake_next_state()",
		"snowflake_catch_up(boolean)",
		"snowflake_next_id_slow(pg_catalog.regclass, pg_catalog.regclass)",
		"snowflake_next_id_from(pg_catalog.regclass, pg_catalog.regclass)",
	}
	knownFunctions3 = append(slices.Clip(knownFunctions2),
		"snowflake_lease_take(pg_catalog.text, bigint)",
		"snowflake_lease_renew(integer, integer, bigint, bigint)",
		"snowflake_lease_release(integer, integer, bigint, bigint)",
		"snowflake_lease_reserve(integer, integer, pg_catalog.text)",
		"snowflake_lease_unreserve(integer, integer)",
	)
	knownFunctions6 = append(slices.Clip(knownFunctions3), "snowflake_nodes_held()")
	knownFunctions7 = append(slices.Clip(knownFunctions6), "snowflake_next_id_local()")

	markedFunctions2 = []string{
		"snowflake_layout", "snowflake_release", "snowflake_compose", "snowflake_decompose",
		"snowflake_timestamp", "snowflake_first_id", "snowflake_last_id", "snowflake_set_node",
		"snowflake_node", "snowflake_next_state", "snowflake_next_id", "snowflake_next_id_slow",
	}
	leaseFunctionNames = []string{
		"snowflake_lease_take", "snowflake_lease_renew", "snowflake_lease_release",
		"snowflake_lease_reserve", "snowflake_lease_unreserve",
	}
	registryFunctionNames = []string{"snowflake_nodes_held"}
	localIDFunctionNames  = []string{"snowflake_next_id_local"}
	markedFunctions3      = slices.Concat(markedFunctions2, leaseFunctionNames)
	markedFunctions6      = slices.Concat(markedFunctions3, registryFunctionNames)
	markedFunctions7      = slices.Concat(markedFunctions6, localIDFunctionNames)
)

func functionNames(signatures []string) []string {
	var names []string
	for _, f := range signatures {
		name, _, _ := strings.Cut(f, "(")
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// templateData is what the templates see. Every field is derived from the
// layout, the node numbers or the validated schema name.
type templateData struct {
	Release        int    // the release being rendered
	Generated      string // ends every comment: "Generated by sfgen release 2."
	Previous       int    // for an upgrade, the release it starts from
	Upgrade        bool   // rendering an upgrade migration
	PreviousUp     string // for an upgrade's Down: the previous release's definitions
	Goose          bool   // rendering a goose migration
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

	// For snowflake_next_id(), whose state is (unix_ms << SequenceBits) | sequence.
	NodeSet   bool  // a first install sets the node Datacenter, Machine (else: the session's settings, or unset)
	NodeSpace int64 // how many nodes the layout has: (MaxDatacenter+1) * (MaxMachine+1)
	NodeBits  uint  // DatacenterBits + MachineBits
	NodeFrom  uint  // 65 - SequenceBits: where the node bits go into the state's 64 bits, 1-based
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
	CatchUpMs, StaleMs, CatchUpSpreadMs, LagLimitMs int64
	DueMs                                           int64 // from release 6: CatchUpDue

	// For the preflight and the step between releases.
	KnownFunctions, KnownFunctionNames []string
	LeaseFunctionNames                 []string // the names new in release 3 (and, from release 4, its registry's): sfgen's only with its marker
	// From release 4: the private schema of the leases, quoted and as a name.
	Private, PrivateName string
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

func newTemplateData(o Options, release int, goose bool) (*templateData, error) {
	target, err := catalog.NewTarget(o.Schema, o.Layout)
	if err != nil {
		return nil, fmt.Errorf("render sql: %w", err)
	}
	l, schema := target.Layout(), target.Schema().Name()
	if o.UnsetNode && (o.Datacenter != 0 || o.Machine != 0) {
		return nil, fmt.Errorf("render sql: a node (%d/%d) and UnsetNode: %w", o.Datacenter, o.Machine, sqlgen.ErrNodeAndUnset)
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
		Release:    release,
		Generated:  catalog.ReleaseMarker(release),
		Goose:      goose,
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

		NodeSet:       !o.UnsetNode,
		NodeSpace:     (l.Max(snowflake.FieldDatacenter) + 1) * (l.Max(snowflake.FieldMachine) + 1),
		NodeBits:      l.Bits(snowflake.FieldDatacenter) + l.Bits(snowflake.FieldMachine),
		NodeFrom:      65 - l.Bits(snowflake.FieldSequence),
		StateBits:     64 - l.Bits(snowflake.FieldDatacenter) - l.Bits(snowflake.FieldMachine),
		StateNodeFrom: 65 - l.Bits(snowflake.FieldDatacenter) - l.Bits(snowflake.FieldMachine) - l.Bits(snowflake.FieldSequence),
		MinState:      l.Epoch() << l.Bits(snowflake.FieldSequence),
		MaxState:      l.Max(snowflake.FieldTimestamp)<<l.Bits(snowflake.FieldSequence) | l.Max(snowflake.FieldSequence),

		CatchUpMs: catchUpAfterMs, StaleMs: staleAfterMs,
		CatchUpSpreadMs: staleAfterMs - catchUpAfterMs, LagLimitMs: lagLimitMs,
		DueMs: catchUpDueMs,

		KnownFunctions: knownFunctions7, KnownFunctionNames: functionNames(knownFunctions7), MarkedFunctions: markedFunctions7,
		LeaseFunctionNames:  leaseFunctionNames,
		LockWaitSeconds:     lockWaitSeconds,
		LockWaitMs:          catchUpLockWaitMs,
		LeaseFutureMs:       leaseFutureBoundMs,
		NodeUnsetRecentXids: nodeUnsetRecentXids,
		TurnSlots:           catchUpTurns,
		TurnSlotsMax:        catchUpTurns - 1,
		TurnTries:           catchUpTurnTries,
		TurnSpins:           catchUpTurnSpins,
	}
	switch release {
	case 2:
		// Frozen: the lists as release 2 shipped them.
		d.KnownFunctions, d.KnownFunctionNames, d.MarkedFunctions = knownFunctions2, functionNames(knownFunctions2), markedFunctions2
	case 3:
		// Frozen: the lists as release 3 shipped them.
		d.KnownFunctions, d.KnownFunctionNames, d.MarkedFunctions = knownFunctions3, functionNames(knownFunctions3), markedFunctions3
	case 4, 5, 6:
		// Frozen: the lists as releases 4 to 6 shipped them. Release 4's
		// names are sfgen's only with its marker, as release 3's.
		d.KnownFunctions, d.KnownFunctionNames, d.MarkedFunctions = knownFunctions6, functionNames(knownFunctions6), markedFunctions6
		d.LeaseFunctionNames = slices.Concat(leaseFunctionNames, registryFunctionNames)
	default:
		// Names new since release 3 are sfgen's only with their release's
		// marker.
		d.LeaseFunctionNames = slices.Concat(leaseFunctionNames, registryFunctionNames, localIDFunctionNames)
	}
	if release >= 4 {
		d.PrivateName = catalog.PrivateSchema(schema)
		d.Private = pgident.Quote(d.PrivateName)
	}
	if release == 1 {
		// Frozen: what release 1 shipped, whatever the constants say now.
		d.CatchUpMs, d.StaleMs, d.CatchUpSpreadMs, d.LagLimitMs = 6, 8, 2, 9
	}
	if goose {
		d.StatementBegin = "-- +goose StatementBegin\n"
		d.StatementEnd = "-- +goose StatementEnd\n"
	}
	return d, nil
}

func render(o Options, release int, name string, goose bool) ([]byte, error) {
	return renderWith(o, release, name, goose, nil)
}

func renderWith(o Options, release int, name string, goose bool, adjust func(*templateData)) ([]byte, error) {
	d, err := newTemplateData(o, release, goose)
	if err != nil {
		return nil, err
	}
	if adjust != nil {
		adjust(d)
	}
	if name == "upgrade.sql.tmpl" {
		d.Upgrade, d.Previous = true, release-1
	}
	var b bytes.Buffer
	if err := releaseTemplates[release].ExecuteTemplate(&b, name, d); err != nil {
		return nil, fmt.Errorf("render sql: %w", err)
	}
	return tidy(b.Bytes()), nil
}

// renderParts renders the named templates of a release one after another,
// as the body of a larger file.
func renderParts(o Options, release int, goose bool, names ...string) (string, error) {
	d, err := newTemplateData(o, release, goose)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	for _, n := range names {
		if err := releaseTemplates[release].ExecuteTemplate(&b, n, d); err != nil {
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

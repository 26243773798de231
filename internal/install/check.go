package install

import (
	"context"
	"errors"
	"fmt"
	"github.com/sfgen/sfgen/internal/sqlstate"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/idkit"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// Errors Check returns, in a *StateError. (ErrLayoutMismatch and
// ErrNewerRelease, which Apply returns too, are Check's as well.)
var (
	// ErrNotInstalled: the schema has no sfgen (no snowflake_layout()).
	ErrNotInstalled = errors.New("sfgen not installed")
	// ErrOlderRelease: the schema is at a release older than this
	// sfgen's, or an older release's plain script ran over it.
	ErrOlderRelease = errors.New("sfgen release older than this one")
	// ErrNoNode: the schema has no node set, so snowflake_next_id()
	// refuses (SQLSTATE SF201).
	ErrNoNode = sqlstate.ErrNoNode
	// ErrNodeMismatch: the schema's node is not the one asked for
	// (CheckNode): a configured node that changed, which Install keeps
	// as it is.
	ErrNodeMismatch = errors.New("sfgen node other than the one asked for")
)

// CheckNode reports whether in, which Check found ready, has the node
// datacenter/machine: nil, or a *StateError of ErrNodeMismatch naming
// both nodes and the command that moves it.
func CheckNode(in catalog.Installed, datacenter, machine int64) error {
	if in.Node.State != catalog.NodeSet || (in.Node.Datacenter == datacenter && in.Node.Machine == machine) {
		return nil
	}
	name := in.Schema.Name()
	return &StateError{Kind: ErrNodeMismatch, Installed: in, Want: in.Layout,
		text: fmt.Sprintf("schema %s has node %s, not datacenter %d, machine %d as asked", name, in.Node, datacenter, machine),
		Fix:  fmt.Sprintf("to move it, as the owner of sfgen's functions: sfgen node --schema %s --datacenter %d --machine %d (IDs stay unique only if no other database or service makes IDs with that node); or ask for the node it has", name, datacenter, machine)}
}

// A StateError is a schema that does not hold what Check asked for: the
// kind (ErrNotInstalled, ErrLayoutMismatch, ErrOlderRelease,
// ErrNewerRelease or ErrNoNode), what the schema holds, the layout asked
// for, and the fix.
type StateError struct {
	Kind      error
	Installed catalog.Installed // what the schema holds
	Want      snowflake.Layout  // the layout asked for
	Fix       string            // the command or call that fixes it
	text      string
}

func (e *StateError) Error() string { return e.text + "; " + e.Fix }

// Unwrap returns Kind.
func (e *StateError) Unwrap() error { return e.Kind }

// Check reports whether schema holds sfgen at the latest release, for
// layout l, with a node set: nil, or a *StateError; a schema that is not
// trusted is the *CheckError of Apply's trust check (ErrForeignObject or
// ErrUntrustedSchema), whose functions it does not call. It reads the
// schema through q (catalog.Inspect) and changes nothing.
func Check(ctx context.Context, q catalog.Querier, schema string, l snowflake.Layout) (catalog.Installed, error) {
	target, err := catalog.NewTarget(schema, l)
	if err != nil {
		return catalog.Installed{}, err
	}
	s := target.Schema()
	in, err := catalog.Inspect(ctx, q, s)
	if err != nil {
		return in, untrustedCheck(s.Name(), err)
	}
	e := &StateError{Installed: in, Want: l}
	name := s.Name()
	switch {
	case in.Layout.IsZero():
		e.Kind = ErrNotInstalled
		e.text = fmt.Sprintf("schema %s has no sfgen (no %s)", name, catalog.FuncLayout)
		e.Fix = fmt.Sprintf("install it: sfgen.Install from Go, or sfgen install --schema %s%s", name, layoutFlag(l))
	case in.Layout != l:
		e.Kind = ErrLayoutMismatch
		e.text = fmt.Sprintf("schema %s holds sfgen for layout %s, not %s", name, describeLayout(in.Layout), describeLayout(l))
		e.Fix = fmt.Sprintf("ask for layout %s in this schema, or install layout %s into another schema", describeLayout(in.Layout), describeLayout(l))
	case in.Release > sqlgen.Latest:
		e.Kind = ErrNewerRelease
		e.text = fmt.Sprintf("schema %s is at sfgen release %d, newer than this sfgen's release %d", name, in.Release, sqlgen.Latest)
		e.Fix = "use a newer sfgen (module and command)"
	case in.Effective() < sqlgen.Latest:
		e.Kind = ErrOlderRelease
		e.text = fmt.Sprintf("schema %s is at sfgen release %d, older than this sfgen's release %d", name, in.Release, sqlgen.Latest)
		if len(in.Stale) > 0 {
			e.text = fmt.Sprintf("schema %s says sfgen release %d, but an older release's plain script replaced %d of its functions", name, in.Release, len(in.Stale))
		}
		e.Fix = fmt.Sprintf("upgrade it the way it was installed: sfgen.Install or sfgen install --schema %s%s; goose with migrations.FS, or sfgen migration --dir DIR, then goose up; or sfgen sql --schema %s | psql -1 -v ON_ERROR_STOP=1", name, layoutFlag(l), name)
	case in.Node.State != catalog.NodeSet:
		e.Kind = ErrNoNode
		e.text = fmt.Sprintf("schema %s has no node set, so snowflake_next_id() refuses to make IDs", name)
		e.Fix = fmt.Sprintf("give this database and schema a node no other maker uses, as the owner of sfgen's functions: sfgen node --schema %s --datacenter N --machine N (or SELECT %s.snowflake_set_node(N, N))", name, s.Quoted())
	default:
		return in, nil
	}
	return in, e
}

// layoutFlag is the --layout flag that names l, "" for Twitter's (the
// default).
func layoutFlag(l snowflake.Layout) string {
	if l == snowflake.Twitter() {
		return ""
	}
	for _, name := range idkit.PresetNames() {
		if p, _ := idkit.LayoutByName(name); p == l {
			return " --layout " + name
		}
	}
	return fmt.Sprintf(" --layout %q", l.String())
}

// A SentinelError is a database's error (Err) and the sentinel of sfgen's
// that it is (sfgen.DBError makes them): its message is Err's, and
// errors.Is and errors.As find both.
type SentinelError struct{ Err, Sentinel error }

func (e *SentinelError) Error() string { return e.Err.Error() }

// Unwrap returns Err and Sentinel.
func (e *SentinelError) Unwrap() []error { return []error{e.Err, e.Sentinel} }

package sfgenpg

import (
	"errors"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/sqlstate"
)

// The sentinels of Install, Check and DBError (errors.Is). Each is the
// one the sfgen command's own install and checks return, so a test of
// errors.Is holds whichever way a schema was reached.
var (
	// ErrNotInstalled: the schema has no sfgen (Check).
	ErrNotInstalled = install.ErrNotInstalled
	// ErrOlderRelease: the schema is at an older sfgen release than this
	// module's, or an older release's plain script ran over it (Check):
	// upgrade it, with Install or the way it was installed.
	ErrOlderRelease = install.ErrOlderRelease
	// ErrNewerRelease: the schema is at a newer sfgen release than this
	// module's (Check, Install): use a newer module.
	ErrNewerRelease = install.ErrNewerRelease
	// ErrLayoutMismatch: the schema holds sfgen for another layout than
	// the one asked for (Check, Install). A schema keeps the layout it was
	// installed with.
	ErrLayoutMismatch = install.ErrLayoutMismatch
	// ErrNoNode: the schema has no node set (Check), or the database
	// refused to make an ID for that reason (DBError of SQLSTATE SF201):
	// give it one with `sfgen node --datacenter N --machine N`.
	ErrNoNode = install.ErrNoNode
	// ErrNodeMismatch: the schema's node is not InstallOptions.Node
	// (Check): the configured node changed, and Install keeps the node a
	// schema has; move it with `sfgen node`, or configure the one it has.
	ErrNodeMismatch = install.ErrNodeMismatch
	// ErrForeignObject: the schema holds objects under sfgen's names that
	// sfgen did not create, or another role owns (Check, Install).
	ErrForeignObject = install.ErrForeignObject
	// ErrUntrustedSchema: roles other than its owner (and superusers)
	// can create objects in the schema, such as overloads of sfgen's
	// functions, or it belongs to another role (Check, Install): sfgen
	// calls no function there.
	ErrUntrustedSchema = install.ErrUntrustedSchema
)

// A SchemaError is a schema that does not hold what Check (or Install)
// was asked for: which schema, what it holds (release, layout, node),
// what was asked for, and what fixes it. It wraps one of
// ErrNotInstalled, ErrLayoutMismatch, ErrOlderRelease, ErrNewerRelease,
// ErrNoNode and ErrNodeMismatch; its message ends with Fix.
type SchemaError struct {
	Schema  string
	Release int          // the schema's sfgen release; 0 without sfgen
	Layout  sfgen.Layout // the schema's layout; the zero Layout without sfgen
	Node    *Node        // the schema's node; nil when it has none set
	Want    sfgen.Layout // the layout asked for
	Fix     string       // the command or call that fixes it
	err     *install.StateError
}

func (e *SchemaError) Error() string { return e.err.Error() }

// Unwrap returns the sentinel that says what is wrong.
func (e *SchemaError) Unwrap() error { return e.err.Kind }

// schemaError returns err with an *install.StateError in it as a
// *SchemaError, and any other err as it is.
func schemaError(err error) error {
	var se *install.StateError
	if !errors.As(err, &se) {
		return err
	}
	in := se.Installed
	return &SchemaError{Schema: in.Schema.Name(), Release: in.Release, Layout: in.Layout,
		Node: nodeOf(in), Want: se.Want, Fix: se.Fix, err: se}
}

// DBError returns err, an error from a database call (database/sql or
// pgx, or any error with an SQLState() string method), wrapped so that
// errors.Is finds the sentinel of sfgen's SQL that raised it:
//
//	SQLSTATE SF201 (no node set)                ErrNoNode
//	SQLSTATE 22003 with sfgen's range message   sfgen.ErrOutOfRange
//	SQLSTATE SF202 (no free node to lease)      ErrNoFreeNode
//	SQLSTATE SF101, SF102, SF103                ErrForeignObject, ErrLayoutMismatch, ErrNewerRelease
//	SQLSTATE SF104, SF105 (schema not trusted)  ErrUntrustedSchema
//
// (internal/sqlstate holds the table of sfgen's SQLSTATEs.)
// Its message is err's, and errors.As still finds err's own types (such
// as *pgconn.PgError). nil stays nil; any other error comes back as it
// is.
func DBError(err error) error {
	if err == nil {
		return nil
	}
	var state interface{ SQLState() string }
	if !errors.As(err, &state) {
		return err
	}
	// One table says which SQLSTATE is which sentinel: internal/sqlstate's.
	sentinel := sqlstate.Public(state.SQLState(), err.Error())
	if sentinel == nil {
		return err
	}
	return &install.SentinelError{Err: err, Sentinel: sentinel}
}

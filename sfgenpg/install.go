package sfgenpg

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// Release is the sfgen SQL release this module installs (Install), checks
// for (Check) and ships in package migrations; `sfgen version` prints the
// same.
const Release = sqlgen.Latest

// A Node is the node, a datacenter and a machine, that a schema's
// snowflake_next_id() puts in every ID it makes. Give every database and
// schema that makes IDs (and every Generator and Lease) its own.
type Node struct {
	Datacenter, Machine int64
}

// InstallOptions say where Install puts sfgen's SQL, for which layout and
// with which node, and what Check expects to find there.
type InstallOptions struct {
	// Schema is the schema of sfgen's functions; "" means public. A
	// schema of sfgen's own (such as "ids") is created if missing, and is
	// trusted from the start: only its owner can create objects in it.
	Schema string
	// Layout is the layout of the IDs; the zero Layout is an error, as
	// elsewhere in the package. A schema keeps the layout it was
	// installed with.
	Layout sfgen.Layout
	// Node is the node of a first install. Nil leaves it to the
	// connection's settings sfgen.datacenter and sfgen.machine when both
	// are set (PGOPTIONS, ALTER DATABASE ... SET), or else unset, so that
	// snowflake_next_id() refuses (ErrNoNode) until `sfgen node` sets
	// one: no database gets a node nobody chose for it. On a schema that
	// has sfgen already, Install keeps its node: a Node that is not that
	// node is an error naming `sfgen node`, which moves it.
	Node *Node
	// Grants are the roles (names as they are, no case folding) given
	// ID-making after the install, with the schema's snowflake_grant():
	// from SQL release 8 only the owner of sfgen's objects (the role
	// Install connects as) and the roles it grants it to can make IDs,
	// with snowflake_next_id() as a column default or called. A role that
	// does not exist, or PUBLIC, is an error before anything changes. A
	// granted role is trusted not to call nextval() on the state by hand
	// (docs/security.md, "Who makes IDs").
	Grants []string
}

// options returns what o asks of package install.
func (o InstallOptions) options() install.Options {
	so := sqlgen.Options{Schema: o.Schema, Layout: o.Layout, UnsetNode: o.Node == nil}
	opts := install.Options{SQL: so, Grants: o.Grants}
	if o.Node != nil {
		dc, m := o.Node.Datacenter, o.Node.Machine
		opts.SQL.Datacenter, opts.SQL.Machine = dc, m
		opts.Node = &install.Node{Datacenter: &dc, Machine: &m}
	}
	return opts
}

// An InstallResult says what Install did and what the schema has now.
type InstallResult struct {
	Schema  string       // the schema installed into
	Applied []string     // the migrations applied by this call, in order (none when it was up to date)
	Release int          // the schema's sfgen release: Release
	Layout  sfgen.Layout // the schema's layout
	Node    *Node        // the schema's node; nil when none is set (snowflake_next_id() refuses until one is)
}

// Install installs sfgen's SQL release line into o.Schema, or upgrades
// it there, as `sfgen install` does: every release in turn on a fresh
// schema, the upgrades it lacks on an older one (node, generator state
// and column defaults kept), recorded in <schema>.sfgen_db_version, apart
// from the application's own goose table. Running it again applies
// nothing.
//
// Before it changes anything it checks the schema under a lock that
// concurrent installs take in turn, and refuses, changing nothing:
// objects under sfgen's names it did not create (ErrForeignObject), a
// schema other roles can create in or own (ErrUntrustedSchema), another
// layout (ErrLayoutMismatch), a newer release (ErrNewerRelease), and a
// Node that is not the one an existing schema has. A failed first install
// leaves the database as it was. Connect as the role that is to own
// sfgen's objects (and that owns them, to upgrade); it needs CREATE on
// the database for the private schema <schema>_sfgen (docs/releases.md).
//
// db may be of any driver (pgx's stdlib, with stdlib.OpenDBFromPool for a
// pgxpool.Pool, or lib/pq); Install uses one or two of its connections at
// a time and gives them back with their search_path as it found them. It
// keeps the generator a schema has: a schema whose snowflake_next_id() is
// the native generator is upgraded by `sfgen install`, not here (Install
// refuses it, changing nothing).
func Install(ctx context.Context, db *sql.DB, o InstallOptions) (InstallResult, error) {
	rep, err := install.RunDB(ctx, db, o.options())
	if err != nil {
		return InstallResult{}, fmt.Errorf("sfgen: install: %w", err)
	}
	res := InstallResult{Schema: rep.Schema, Applied: rep.Applied, Release: int(rep.Version)}
	schema, err := catalog.ParseSchema(rep.Schema)
	if err != nil {
		return res, err
	}
	in, err := catalog.Inspect(ctx, catalog.DB(db), schema)
	if err != nil {
		return res, fmt.Errorf("sfgen: install: read schema %s back: %w", schema, err)
	}
	res.Layout, res.Node = in.Layout, nodeOf(in)
	return res, nil
}

// nodeOf is the node in holds, nil when none is set.
func nodeOf(in catalog.Installed) *Node {
	if in.Node.State != catalog.NodeSet {
		return nil
	}
	return &Node{Datacenter: in.Node.Datacenter, Machine: in.Node.Machine}
}

// Check reports whether o.Schema holds sfgen at this module's Release,
// for o.Layout, with a node set, as an application may check at startup:
// nil, or a *SchemaError wrapping ErrNotInstalled, ErrLayoutMismatch,
// ErrOlderRelease (an Install upgrades it), ErrNewerRelease, ErrNoNode, or
// ErrNodeMismatch when o.Node is not nil and not the schema's node (a
// configured node that changed: Install keeps a schema's node, and
// `sfgen node` moves it). A schema that is not trusted is an error
// wrapping ErrForeignObject or ErrUntrustedSchema, and Check calls none
// of its functions. Check only reads, through db, which may be of any
// driver.
func Check(ctx context.Context, db *sql.DB, o InstallOptions) error {
	in, err := install.Check(ctx, catalog.DB(db), o.Schema, o.Layout)
	if err == nil && o.Node != nil {
		err = install.CheckNode(in, o.Node.Datacenter, o.Node.Machine)
	}
	if err != nil {
		return fmt.Errorf("sfgen: check: %w", schemaError(err))
	}
	return nil
}

// GooseMigration returns a goose migration, numbered version in the
// application's own goose Provider (goose.WithGoMigrations), whose Up is
// Install(ctx, db, o): the application's own migrations after it can use
// sfgen's functions (a column DEFAULT ids.snowflake_next_id()), and the
// first Up of a fresh database installs sfgen and runs them in one go.
// sfgen keeps its own record of its releases (<schema>.sfgen_db_version).
// goose runs a version once, so a later module's release reaches a
// database already migrated only through Install: call it (or Check, to
// refuse to start on an older release) at startup too. The migration runs
// outside a transaction, on connections of its own from the Provider's
// db, under sfgen's own locks: let db open two connections besides the
// Provider's. Its Down does nothing: sfgen's objects stay, since column
// defaults depend on them.
func GooseMigration(version int64, o InstallOptions) *goose.Migration {
	return goose.NewGoMigration(version, &goose.GoFunc{RunDB: func(ctx context.Context, db *sql.DB) error {
		_, err := Install(ctx, db, o)
		return err
	}}, nil)
}

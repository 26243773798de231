package install

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/resume"
)

// ErrCitusCopied: on a Citus node, the schema holds sfgen objects that
// Citus made its own (catalog.CitusCopies), so its node may be another
// node's, and the install was not given this node's own. A usage error.
var ErrCitusCopied = errors.New("citus made the schema's sfgen its own")

// A CitusRepair is what an install undid of what Citus had done to a
// schema's sfgen on one node: release 7 let a distributed table of any
// role's, whose default reached sfgen's objects, make Citus copy the
// coordinator's node and sequences over each worker's (docs/citus.md, "A
// node Citus overwrote").
type CitusRepair struct {
	// Found is what catalog.CitusCopies listed before the install.
	Found []string
	// Datacenter and Machine are the node the install set: the one it
	// was given, before the upgrade (whose script ends the objects being
	// Citus's and gives the sequences sfgen's range back).
	Datacenter, Machine int64
	// Resumed is resume's raise of the state above every ID of the node
	// stored here (nil when it failed: Report's error says why).
	Resumed *resume.Report
}

// citusCopies is catalog.CitusCopies for schema, nothing where it has no
// sfgen to read.
func citusCopies(ctx context.Context, db *sql.DB, schema string) ([]string, error) {
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		return nil, err
	}
	copies, err := catalog.CitusCopies(ctx, catalog.DB(db), s)
	if err != nil {
		return nil, &StepError{Cause: err, text: func(cause string) string { return cause }}
	}
	return copies, nil
}

// setCopiedNode gives a schema that Citus made its own the node the
// install was given (both fields), before anything else: its node may be
// the coordinator's, and the upgrade makes the generator work again.
// Without a node it refuses, naming what it found and the fix.
func setCopiedNode(ctx context.Context, db *sql.DB, schema string, copies []string, node *Node) (*CitusRepair, error) {
	if node == nil || node.Datacenter == nil || node.Machine == nil {
		return nil, &StepError{Kind: ErrCitusCopied, text: func(string) string {
			return fmt.Sprintf("schema %s on this Citus node holds sfgen objects that Citus made its own (%s), so its node may be another node's; give this node's own: sfgen install --schema %s --datacenter N --machine N sets it, undoes the rest and raises the state above this node's stored IDs (docs/citus.md, \"A node Citus overwrote\")",
				schema, strings.Join(copies, "; "), schema)
		}}
	}
	dc, m := *node.Datacenter, *node.Machine
	if _, err := db.ExecContext(ctx, "SELECT "+pgident.Quote(schema)+".snowflake_set_node($1::integer, $2::integer)", dc, m); err != nil {
		return nil, &StepError{Cause: err, text: func(cause string) string {
			return fmt.Sprintf("set the node of schema %s, which Citus made its own, to datacenter %d, machine %d: %s; nothing else changed", schema, dc, m, cause)
		}}
	}
	return &CitusRepair{Found: copies, Datacenter: dc, Machine: m}, nil
}

// resumeCopied raises the state of a schema repaired above every ID of
// its node stored on this node (resume.Run), after the upgrade.
func resumeCopied(ctx context.Context, db *sql.DB, schema string, r *CitusRepair) error {
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		return err
	}
	rr, err := resume.Run(ctx, db, resume.Options{Schema: s})
	if err != nil {
		return &StepError{Cause: err, text: func(cause string) string {
			return fmt.Sprintf("schema %s is repaired (node datacenter %d, machine %d; no longer Citus's), but raising its state above this node's stored IDs failed: %s; run sfgen resume --schema %s", schema, r.Datacenter, r.Machine, cause, schema)
		}}
	}
	r.Resumed = rr
	return nil
}

package catalog

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// A CitusNode is one active primary node of a Citus cluster, as its
// pg_dist_node lists it: group 0 is the coordinator.
type CitusNode struct {
	Group int    `json:"group"`
	Host  string `json:"host"`
	Port  int    `json:"port"`
}

// Role is "coordinator" for group 0 and "worker" for the others.
func (n CitusNode) Role() string {
	if n.Group == 0 {
		return "coordinator"
	}
	return "worker"
}

// ReadCitusNodes returns the active primary nodes of the Citus cluster
// q's database belongs to, the coordinator first, and whether it has
// Citus at all (no nodes and false without). A coordinator that was never
// given its own address (citus_set_coordinator_host) is not among them.
func ReadCitusNodes(ctx context.Context, q Querier) ([]CitusNode, bool, error) {
	var present bool
	if err := queryRow(ctx, q, "citus_present", &present); err != nil {
		return nil, false, fmt.Errorf("look for Citus: %w", err)
	}
	if !present {
		return nil, false, nil
	}
	var rows string
	if err := queryRow(ctx, q, "citus_nodes", &rows); err != nil {
		return nil, true, fmt.Errorf("read Citus' pg_dist_node: %w", err)
	}
	var out []CitusNode
	for _, line := range lines(rows) {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			return nil, true, fmt.Errorf("read Citus' pg_dist_node: unexpected row %q", line)
		}
		group, err1 := strconv.Atoi(f[0])
		port, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			return nil, true, fmt.Errorf("read Citus' pg_dist_node: unexpected row %q", line)
		}
		out = append(out, CitusNode{Group: group, Host: f[1], Port: port})
	}
	return out, true, nil
}

// CitusDistributed reports whether schema.table is a table that Citus
// spreads over its nodes (it is in pg_dist_partition); false where the
// database has no Citus.
func CitusDistributed(ctx context.Context, q Querier, schema, table string) (bool, error) {
	var present bool
	if err := queryRow(ctx, q, "citus_present", &present); err != nil {
		return false, fmt.Errorf("look for Citus: %w", err)
	}
	if !present {
		return false, nil
	}
	stmt, err := render("citus_distributed", nil)
	if err != nil {
		return false, err
	}
	var dist bool
	if err := q.QueryRow(ctx, stmt, schema, table).Scan(&dist); err != nil {
		return false, fmt.Errorf("look up %s.%s in Citus' pg_dist_partition: %w", schema, table, err)
	}
	return dist, nil
}

// CitusDistributionColumn returns, for a table in Citus' metadata
// (pg_dist_partition: distributed, reference or Citus-local), the column
// it is distributed by ("" for a reference or Citus-local table) and
// true; "" and false for any other table, or where the database has no
// Citus.
func CitusDistributionColumn(ctx context.Context, q Querier, schema, table string) (string, bool, error) {
	if dist, err := CitusDistributed(ctx, q, schema, table); err != nil || !dist {
		return "", false, err
	}
	stmt, err := render("citus_distribution_column", nil)
	if err != nil {
		return "", false, err
	}
	var column string
	if err := q.QueryRow(ctx, stmt, schema, table).Scan(&column); err != nil {
		return "", false, fmt.Errorf("read the distribution column of %s.%s in Citus' pg_dist_partition: %w", schema, table, err)
	}
	return column, true, nil
}

// CompareCitusFleet is CompareFleet for the nodes of one Citus cluster,
// whose every node can take writes: a target that was read and has no
// sfgen, or no node set, is Missing too (inserts through that node fail),
// and the report is OK only when none is.
func CompareCitusFleet(targets []FleetTarget) FleetReport {
	r := CompareFleet(targets)
	r.Citus = true
	for i, t := range r.Targets {
		if t.Error == "" && t.SameAs == nil && !t.NodeSet {
			r.Missing = append(r.Missing, i)
		}
		if t.Error == "" && t.SameAs == nil && len(t.CitusCopies) > 0 {
			r.Copied = append(r.Copied, i)
		}
	}
	r.OK = r.OK && len(r.Missing) == 0 && len(r.Copied) == 0
	return r
}

// CitusCopies lists, one line each, what Citus copied of schema's sfgen
// over this node's own: sfgen's objects that this node's pg_dist_object
// lists as Citus's distributed objects (but snowflake_next_id_local(),
// which is meant to be one), and the generator's sequences restarted in
// Citus's range. Release 7 let a distributed table of any role's, whose
// default reached sfgen's objects, do that (docs/citus.md); release 8's
// upgrade undoes all but the node, which `sfgen install` sets to the one
// it is given. Empty where the database has no Citus.
func CitusCopies(ctx context.Context, q Querier, schema Schema) ([]string, error) {
	var present bool
	if err := queryRow(ctx, q, "citus_present", &present); err != nil {
		return nil, fmt.Errorf("look for Citus: %w", err)
	}
	if !present {
		return nil, nil
	}
	stmt, err := render("citus_copies", nil)
	if err != nil {
		return nil, err
	}
	var out string
	if err := q.QueryRow(ctx, stmt, schema.Name()).Scan(&out); err != nil {
		return nil, fmt.Errorf("look for what Citus copied of schema %s: %w", schema, err)
	}
	return lines(out), nil
}

// CitusLocalDDL returns the statement that, on a Citus node, turns Citus'
// DDL propagation off for the transaction (or, transaction false, the
// session), so that the DDL after it changes this node alone: sfgen's
// node is each node's own, and a worker refuses DDL that would
// propagate. Elsewhere it does nothing.
func CitusLocalDDL(transaction bool) string {
	stmt, err := render("citus_local_ddl", struct{ Transaction bool }{transaction})
	if err != nil {
		panic(err) // a template of this package's own, with a bool
	}
	return stmt
}

// CitusRole returns "coordinator" or "worker" for the Citus node q's
// database is on (pg_dist_local_group: group 0 is the coordinator), or ""
// where the database has no Citus.
func CitusRole(ctx context.Context, q Querier) (string, error) {
	var present bool
	if err := queryRow(ctx, q, "citus_present", &present); err != nil {
		return "", fmt.Errorf("look for Citus: %w", err)
	}
	if !present {
		return "", nil
	}
	var group int
	if err := queryRow(ctx, q, "citus_local_group", &group); err != nil {
		return "", fmt.Errorf("read Citus' pg_dist_local_group: %w", err)
	}
	return CitusNode{Group: group}.Role(), nil
}

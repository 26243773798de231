package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/pgcluster/citustest"
)

// TestNodeCitusFleet runs 'sfgen node --dsn COORDINATOR' on a Citus
// coordinator with two workers: it checks every node of pg_dist_node.
//   - A schema installed on the coordinator alone (DDL propagation off)
//     leaves the workers without a node: both are missing, exit 1.
//   - Installed on each worker too, with nodes of their own: ok, exit 0.
//   - 'sfgen node --datacenter --machine' on a worker sets that
//     worker's node alone: two set alike share it, exit 1.
//   - A schema installed through the coordinator as usual, which Citus
//     copies to every worker with the coordinator's node: three pairs
//     share it, exit 1.
func TestNodeCitusFleet(t *testing.T) {
	cl := citustest.Start(t, 2)
	local := func(dsn string) string { return dsn + "&options=-c%20citus.enable_ddl_propagation%3Doff" }
	install := func(dsn, schema, machine string) {
		t.Helper()
		if code, _, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", schema, "--datacenter", "1", "--machine", machine); code != exitOK {
			t.Fatalf("install %s on %s: exit %d: %s", schema, dsn, code, errOut)
		}
	}
	coordinator := cl.Coordinator.DSN()

	install(local(coordinator), "loc", "1")
	code, out, _ := sfgen(t, "node", "--dsn", coordinator, "--schema", "loc")
	if code != exitFail || strings.Count(out, "(citus worker) schema loc: no sfgen") != 2 ||
		!strings.Contains(out, "(citus coordinator) schema loc: datacenter 1, machine 1") ||
		!strings.Contains(out, "FAIL: 2 nodes of this Citus cluster cannot make IDs") {
		t.Fatalf("coordinator alone: exit %d:\n%s", code, out)
	}

	for i, w := range cl.Workers {
		install(local(w.DSN()), "loc", string(rune('2'+i)))
	}
	code, out, _ = sfgen(t, "node", "--dsn", coordinator, "--schema", "loc")
	if code != exitOK || !strings.Contains(out, "ok: 3 schemas with sfgen, each with its own node") {
		t.Fatalf("each node its own: exit %d:\n%s", code, out)
	}
	code, out, _ = sfgen(t, "node", "--dsn", coordinator, "--schema", "loc", "--json")
	var r struct {
		OK      bool `json:"ok"`
		Citus   bool `json:"citus"`
		Targets []struct {
			Database string `json:"database"`
			Machine  int    `json:"machine"`
		} `json:"targets"`
		Missing []int `json:"missing"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--json: %v: %s", err, out)
	}
	if code != exitOK || !r.OK || !r.Citus || len(r.Targets) != 3 || len(r.Missing) != 0 {
		t.Fatalf("--json: exit %d: %s", code, out)
	}
	for i, tg := range r.Targets {
		role := "(citus worker)"
		if i == 0 {
			role = "(citus coordinator)"
		}
		if tg.Machine != i+1 || !strings.HasSuffix(tg.Database, role) {
			t.Errorf("target %d: %+v; want machine %d, %s", i, tg, i+1, role)
		}
	}

	// A worker's node is set there alone; set to another worker's, the
	// two share it and the check says so.
	for _, w := range cl.Workers {
		if code, out, errOut := sfgen(t, "node", "--dsn", w.DSN(), "--schema", "loc", "--datacenter", "1", "--machine", "7"); code != exitOK {
			t.Fatalf("set a worker's node: exit %d: %s%s", code, out, errOut)
		}
	}
	code, out, _ = sfgen(t, "node", "--dsn", coordinator, "--schema", "loc")
	if code != exitFail || !strings.Contains(out, "(citus coordinator) schema loc: datacenter 1, machine 1,") ||
		strings.Count(out, "(citus worker) schema loc: datacenter 1, machine 7,") != 2 ||
		strings.Count(out, "shared node: datacenter 1, machine 7") != 1 {
		t.Fatalf("two workers set to 1/7: exit %d:\n%s", code, out)
	}

	install(coordinator, "copied", "4")
	code, out, _ = sfgen(t, "node", "--dsn", coordinator, "--schema", "copied")
	if code != exitFail || strings.Count(out, "shared node: datacenter 1, machine 4") != 3 {
		t.Fatalf("copied by Citus: exit %d:\n%s", code, out)
	}
}

// TestVerifyCitusWorker runs 'sfgen verify' on a Citus worker and on its
// coordinator, each with sfgen installed on its own (DDL propagation off,
// nodes 1/1 and 1/2): both pass, each generator check finding its own
// node. (A worker refuses the DDL of verify's temporary helpers unless
// its session keeps them local.)
func TestVerifyCitusWorker(t *testing.T) {
	cl := citustest.Start(t, 1)
	local := func(dsn string) string { return dsn + "&options=-c%20citus.enable_ddl_propagation%3Doff" }
	for i, dsn := range []string{cl.Coordinator.DSN(), cl.Workers[0].DSN()} {
		machine := string(rune('1' + i))
		if code, _, errOut := sfgen(t, "install", "--dsn", local(dsn), "--schema", "loc", "--datacenter", "1", "--machine", machine); code != exitOK {
			t.Fatalf("install on %s: exit %d: %s", dsn, code, errOut)
		}
		code, out, errOut := sfgen(t, "verify", "--dsn", dsn, "--schema", "loc")
		if code != exitOK || !strings.Contains(out, "0 with another node than 1/"+machine) {
			t.Errorf("verify %s: exit %d:\n%s%s", dsn, code, out, errOut)
		}
	}
}

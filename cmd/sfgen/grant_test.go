package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

// TestInstallGrant: install --grant ROLE gives that role ID-making, so
// its inserts through the default work, and install, node and verify say
// who holds it; a role that does not exist is refused before anything
// changes (exit 1), and PUBLIC is bad usage (exit 2).
func TestInstallGrant(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	app, appDSN := pgtest.LoginRole(t, dsn, "app", "")
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	schemaExists := func() bool {
		var ok bool
		if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = 'ids')").Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}

	code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "ids", "--datacenter", "1", "--machine", "1", "--grant", "nosuch_role_here")
	if code != exitFail || out != "" || !strings.Contains(errOut, `"nosuch_role_here"`) || !strings.Contains(errOut, "no such role") {
		t.Errorf("--grant of a role that does not exist: exit %d, %q, %q; want 1 naming it", code, out, errOut)
	}
	oneLine(t, errOut)
	if schemaExists() {
		t.Errorf("a refused install made schema ids")
	}
	code, out, errOut = sfgen(t, "install", "--dsn", dsn, "--schema", "ids", "--datacenter", "1", "--machine", "1", "--grant", "public")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "named roles only") {
		t.Errorf("--grant public: exit %d, %q, %q; want 2", code, out, errOut)
	}

	code, out, errOut = sfgen(t, "install", "--dsn", dsn, "--schema", "ids", "--datacenter", "1", "--machine", "1", "--grant", app)
	if code != exitOK || !strings.Contains(out, "ID-making: the owner and "+app+"\n") {
		t.Fatalf("install --grant %s: exit %d, %q, %q; want it to say %s holds ID-making", app, code, out, errOut, app)
	}
	if _, err := admin.Exec(ctx, "CREATE TABLE public.t (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), v int); GRANT INSERT, SELECT ON public.t TO "+app); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, appDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var id int64
	if err := conn.QueryRow(ctx, "INSERT INTO public.t (v) VALUES (1) RETURNING id").Scan(&id); err != nil {
		t.Fatalf("%s inserts through the default: %v", app, err)
	}
	if dc, m := (id>>17)&31, (id>>12)&31; dc != 1 || m != 1 {
		t.Errorf("ID %d has node %d/%d; want 1/1", id, dc, m)
	}

	if code, out, errOut := sfgen(t, "node", "--dsn", dsn, "--schema", "ids"); code != exitOK || !strings.Contains(out, "ID-making: the owner and "+app+"\n") {
		t.Errorf("node: exit %d, %q, %q; want it to say %s holds ID-making", code, out, errOut, app)
	}
	code, out, errOut = sfgen(t, "verify", "--dsn", dsn, "--schema", "ids", "--count", "10", "--json")
	var rep struct {
		IDMakers []string `json:"id_makers"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK || !slices.Equal(rep.IDMakers, []string{app}) {
		t.Errorf("verify --json: exit %d, %v, id_makers %v, stderr %q; want [%s]", code, err, rep.IDMakers, errOut, app)
	}
	// Without a grant, the owner alone, and install says how to give it.
	code, out, _ = sfgen(t, "install", "--dsn", dsn, "--schema", "ids2", "--datacenter", "1", "--machine", "2")
	if code != exitOK || !strings.Contains(out, "ID-making: the owner alone (") || !strings.Contains(out, "--grant ROLE") {
		t.Errorf("install without --grant: exit %d, %q; want the owner alone and how to grant", code, out)
	}
}

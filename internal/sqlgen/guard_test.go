package sqlgen_test

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestScriptRunsInOneTransactionOrNotAtAll: the plain script carries no
// transaction control of its own, so it applies whole in the transaction
// it is given (psql -1, from a file or standard input; one simple-protocol
// query, an implicit transaction) and, where every statement commits on
// its own (psql without -1, with or without ON_ERROR_STOP), it refuses
// before it changes anything and leaves the session read-only.
func TestScriptRunsInOneTransactionOrNotAtAll(t *testing.T) {
	script, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	psql, psqlErr := findPsql()
	for _, tc := range []struct {
		name     string
		psqlArgs []string // nil: one simple-protocol query through pgx
		applied  bool
	}{
		{"one query", nil, true},
		{"psql -1 -f -", []string{"-1", "-v", "ON_ERROR_STOP=1", "-f", "-"}, true},
		{"sfgen sql | psql -1", []string{"-1", "-v", "ON_ERROR_STOP=1"}, true},
		{"psql -f - without -1", []string{"-v", "ON_ERROR_STOP=1", "-f", "-"}, false},
		{"psql without -1 or ON_ERROR_STOP", []string{"-f", "-"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := pgtest.DSN(t)
			var out []byte
			var runErr error
			if tc.psqlArgs == nil {
				c, err := pgx.Connect(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				_, runErr = c.Exec(ctx, string(script))
				c.Close(ctx)
			} else {
				if psqlErr != nil {
					t.Skip(psqlErr)
				}
				cmd := exec.Command(psql, append([]string{"-X", "-q", "-d", dsn}, tc.psqlArgs...)...)
				cmd.Stdin = bytes.NewReader(script)
				out, runErr = cmd.CombinedOutput()
			}
			c, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			var schemas, functions int
			if err := c.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_namespace WHERE nspname IN ('ids', 'ids_sfgen')),
				(SELECT count(*) FROM pg_proc WHERE proname LIKE 'snowflake%')`).Scan(&schemas, &functions); err != nil {
				t.Fatal(err)
			}
			if tc.applied {
				if runErr != nil || schemas != 2 || functions == 0 {
					t.Fatalf("run: %v, %d schemas, %d functions; want it applied\n%s", runErr, schemas, functions, out)
				}
				var id int64
				if err := c.QueryRow(ctx, "SELECT ids.snowflake_next_id()").Scan(&id); err != nil || id <= 0 {
					t.Fatalf("snowflake_next_id() = %d, %v", id, err)
				}
				return
			}
			if schemas != 0 || functions != 0 {
				t.Errorf("refused run left %d schemas and %d functions behind\n%s", schemas, functions, out)
			}
			if !strings.Contains(string(out), "sfgen: this SQL must run in one transaction") {
				t.Errorf("psql output does not give the guard's reason:\n%s", out)
			}
			if len(tc.psqlArgs) > 0 && slices.Contains(tc.psqlArgs, "ON_ERROR_STOP=1") && runErr == nil {
				t.Errorf("psql with ON_ERROR_STOP exited 0 on a refusal")
			}
		})
	}
}

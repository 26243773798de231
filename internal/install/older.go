package install

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/sfgen/sfgen/internal/catalog"
)

// An OlderTransaction is a transaction that was in progress when an
// upgrade from release 1 to 6 committed and has not ended: a statement in
// it may run that release's code, which takes values from the state
// without reading release 8's guard, so until none is left the catch-up
// moves the state by nextval() alone (IDs stay unique, dated late).
type OlderTransaction struct {
	PID  int    // its backend; 0 before the first catch-up listed them
	Role string // its session's role, where the installing role may see it
	VXID string // its virtual transaction ID
}

func (o OlderTransaction) String() string {
	if o.PID == 0 {
		return "the transactions to be listed by the first catch-up"
	}
	if o.Role == "" {
		return fmt.Sprintf("pid %d", o.PID)
	}
	return fmt.Sprintf("pid %d (role %s)", o.PID, o.Role)
}

// olderTransactions lists schema's older transactions (release 8's
// snowflake_older_transactions(), which also brings the list up to date);
// none where the schema has no such function.
func olderTransactions(ctx context.Context, db *sql.DB, schema catalog.Schema) ([]OlderTransaction, error) {
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT pg_catalog.to_regprocedure($1) IS NOT NULL", schema.Func("snowflake_older_transactions()")).Scan(&exists); err != nil || !exists {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, "SELECT COALESCE(t.pid, 0), t.role_name, t.vxid FROM "+schema.Func("snowflake_older_transactions()")+" t")
	if err != nil {
		return nil, fmt.Errorf("list the transactions begun before the upgrade: %w", err)
	}
	defer rows.Close()
	var list []OlderTransaction
	for rows.Next() {
		var o OlderTransaction
		if err := rows.Scan(&o.PID, &o.Role, &o.VXID); err != nil {
			return nil, err
		}
		list = append(list, o)
	}
	return list, rows.Err()
}

// waitOlder waits up to wait, polling, until schema lists no older
// transaction. It returns those it found first (nil when there were
// none) and those left when it gave up (nil when none is left).
func waitOlder(ctx context.Context, db *sql.DB, schema catalog.Schema, wait time.Duration) (found, left []OlderTransaction, err error) {
	deadline := time.Now().Add(wait)
	for {
		list, err := olderTransactions(ctx, db, schema)
		if err != nil {
			return found, list, err
		}
		if found == nil {
			found = list
		}
		if len(list) == 0 || !time.Now().Before(deadline) {
			return found, list, nil
		}
		select {
		case <-ctx.Done():
			return found, list, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

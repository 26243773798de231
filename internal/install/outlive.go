package install

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/sfgen/sfgen/internal/catalog"
)

// LastReleaseWithOwnGuard is the last release whose snowflake_next_id()
// reads a guard of its own (releases 1 to 6); from release 7 on, the
// expression is the latest's. A statement of such a release planned
// before an upgrade runs on after it, reading its own guard, which the
// upgrade parks: a catch-up of the new release while it runs can hand it
// IDs already handed out (docs/releases.md).
const LastReleaseWithOwnGuard = 6

// idTakers lists the backends, but this one, whose transactions hold
// a lock on schema's state sequence: those that have taken values from it
// (nextval() keeps its lock to the transaction's end). It reads pg_locks
// and pg_stat_activity, which every role may.
func idTakers(ctx context.Context, db *sql.DB, schema catalog.Schema) ([]IDTaker, error) {
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT l.pid, COALESCE(a.usename::pg_catalog.text, '')
		FROM pg_catalog.pg_locks l
		LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) l.pid
		WHERE l.locktype OPERATOR(pg_catalog.=) 'relation'
			AND l.relation OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1)
			AND l.pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid()
		ORDER BY 1`, schema.Quoted()+".snowflake_state")
	if err != nil {
		return nil, fmt.Errorf("list the sessions taking IDs: %w", err)
	}
	defer rows.Close()
	var list []IDTaker
	for rows.Next() {
		var o IDTaker
		if err := rows.Scan(&o.PID, &o.Role); err != nil {
			return nil, err
		}
		list = append(list, o)
	}
	return list, rows.Err()
}

// An IDTaker is a session whose transaction was taking IDs (it held a
// lock on the state) when an upgrade from a release with a guard of its
// own committed.
type IDTaker struct {
	PID  int
	Role string // its session's role, where the installing role may see it
}

func (o IDTaker) String() string {
	if o.Role == "" {
		return fmt.Sprintf("pid %d", o.PID)
	}
	return fmt.Sprintf("pid %d (role %s)", o.PID, o.Role)
}

package catalog

import (
	"context"
	"fmt"
)

// PublicRole is how IDMakers names PUBLIC, every role.
const PublicRole = "PUBLIC"

// IDMakers lists, sorted, the roles besides its owner that may make IDs
// with schema's snowflake_next_id(): those with USAGE on its state
// sequence, which snowflake_grant() gives (PublicRole for every role,
// which releases 1 to 7 gave and an upgrade keeps where PUBLIC may insert
// into a table whose default makes IDs). A granted role is trusted: its
// own nextval() on the state can make IDs repeat. It reads the catalogs
// only; ok is false where schema has no state sequence.
func IDMakers(ctx context.Context, q Querier, schema Schema) (roles []string, ok bool, err error) {
	var list string
	if err := q.QueryRow(ctx, `SELECT c.oid IS NOT NULL, COALESCE((
		SELECT pg_catalog.string_agg(g.name, E'\n' ORDER BY g.name) FROM (
			SELECT DISTINCT CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN $2
				ELSE a.grantee::pg_catalog.regrole::pg_catalog.text END AS name
			FROM pg_catalog.aclexplode(c.relacl) a
			WHERE a.privilege_type OPERATOR(pg_catalog.=) 'USAGE' AND a.grantee OPERATOR(pg_catalog.<>) c.relowner) g), '')
		FROM (SELECT 1) one
		LEFT JOIN pg_catalog.pg_namespace n ON n.nspname OPERATOR(pg_catalog.=) $1
		LEFT JOIN pg_catalog.pg_class c ON c.relnamespace OPERATOR(pg_catalog.=) n.oid
			AND c.relname OPERATOR(pg_catalog.=) 'snowflake_state' AND c.relkind OPERATOR(pg_catalog.=) 'S'`,
		schema.Name(), PublicRole).Scan(&ok, &list); err != nil {
		return nil, false, fmt.Errorf("read who may make IDs in schema %s: %w", schema, err)
	}
	return lines(list), ok, nil
}

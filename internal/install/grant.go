package install

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/sfgen/sfgen/internal/catalog"
)

// ErrGrant: a role that Options.Grants names cannot be given ID-making
// (it does not exist, or is PUBLIC); Run found it out before it changed
// anything.
var ErrGrant = errors.New("cannot grant ID-making")

// checkGrants refuses, before anything changes, roles that do not exist
// and PUBLIC (which would let every role make IDs repeat).
func checkGrants(ctx context.Context, db *sql.DB, roles []string) error {
	var missing []string
	for _, r := range roles {
		if strings.EqualFold(r, catalog.PublicRole) {
			return &StepError{Kind: ErrGrant, text: func(string) string {
				return "ID-making is granted to named roles only: PUBLIC, every role, could make IDs repeat by calling nextval() on the state by hand (docs/security.md); nothing was changed"
			}}
		}
		var exists bool
		if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) $1)", r).Scan(&exists); err != nil {
			return fmt.Errorf("look up role %q: %w", r, err)
		}
		if !exists {
			missing = append(missing, fmt.Sprintf("%q", r))
		}
	}
	if len(missing) > 0 {
		return &StepError{Kind: ErrGrant, text: func(string) string {
			return fmt.Sprintf("cannot grant ID-making to %s: no such role in this server (role names are exact: no case folding); nothing was changed", strings.Join(missing, ", "))
		}}
	}
	return nil
}

// grant gives ID-making in schema to each role, with the schema's
// snowflake_grant(), in one transaction.
func grant(ctx context.Context, db *sql.DB, schema string, roles []string) error {
	if len(roles) == 0 {
		return nil
	}
	s, err := catalog.ParseSchema(schema)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, r := range roles {
		if _, err := tx.ExecContext(ctx, "SELECT "+s.Func("snowflake_grant(pg_catalog.quote_ident($1)::pg_catalog.regrole)"), r); err != nil {
			return &StepError{Kind: ErrGrant, Cause: err, text: func(cause string) string {
				return fmt.Sprintf("grant ID-making in schema %s to role %q: %s", schema, r, cause)
			}}
		}
	}
	return tx.Commit()
}

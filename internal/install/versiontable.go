package install

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"fmt"
	"text/template"

	"github.com/sfgen/sfgen/internal/catalog"
)

//go:embed sql/version_table.sql.tmpl
var versionTableFS embed.FS

var versionTableSQL = template.Must(template.New("").ParseFS(versionTableFS, "sql/version_table.sql.tmpl"))

// versionTable makes the schema's version table as goose would, unless it
// exists, and checks that it is what it made: the installing role's plain
// table, with no trigger, rule, row security or grant through which
// another role could act when goose writes to it. Both in one transaction
// on conn, which holds Apply's lock: goose then finds the table and
// never makes one of its own, outside the checks.
func versionTable(ctx context.Context, conn *sql.Conn, schema catalog.Schema) error {
	var create, check bytes.Buffer
	if err := versionTableSQL.ExecuteTemplate(&create, "create", struct{ Schema string }{schema.Quoted()}); err != nil {
		return err
	}
	if err := versionTableSQL.ExecuteTemplate(&check, "check", nil); err != nil {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("make %s.%s: %w", schema, VersionTable, err)
	}
	defer tx.Rollback()
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
		WHERE n.nspname OPERATOR(pg_catalog.=) $1 AND c.relname OPERATOR(pg_catalog.=) $2)`,
		schema.Name(), VersionTable).Scan(&exists); err != nil {
		return fmt.Errorf("make %s.%s: %w", schema, VersionTable, err)
	}
	if !exists {
		if _, err := tx.ExecContext(ctx, create.String()); err != nil {
			return fmt.Errorf("make %s.%s: %w", schema, VersionTable, err)
		}
	}
	var wrong string
	if err := tx.QueryRowContext(ctx, check.String(), schema.Name(), VersionTable).Scan(&wrong); err != nil {
		return fmt.Errorf("check %s.%s: %w", schema, VersionTable, err)
	}
	if wrong != "" {
		return &CheckError{Schema: schema.Name(), err: ErrForeignObject,
			Message: fmt.Sprintf("sfgen: schema %s already has table %s.%s %s, which sfgen did not make so; sfgen will not write its versions where another role could act: drop or rename it, or install into another schema", schema, schema, VersionTable, wrong)}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("make %s.%s: %w", schema, VersionTable, err)
	}
	return nil
}

package pgident_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/pgident"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestKeywordsAsPostgreSQLHasThem checks ValidateSchema against the
// server's own keyword list (pg_get_keywords()): it refuses each reserved
// one (categories R and T), and PostgreSQL takes each other one it
// accepts as a schema name unquoted, as goose writes sfgen's version
// table's name.
func TestKeywordsAsPostgreSQLHasThem(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT word, catcode FROM pg_catalog.pg_get_keywords() ORDER BY word")
	if err != nil {
		t.Fatal(err)
	}
	words, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Word, Cat string }])
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range words {
		err := pgident.ValidateSchema(w.Word)
		switch {
		case w.Cat == "R" || w.Cat == "T":
			if err == nil || !strings.Contains(err.Error(), "reserved SQL keyword") {
				t.Errorf("ValidateSchema(%q), a reserved keyword (%s): %v", w.Word, w.Cat, err)
			}
		case err == nil:
			if _, err := conn.Exec(ctx, "CREATE SCHEMA "+w.Word+"; CREATE TABLE "+w.Word+".goose_db_version (id int); DROP SCHEMA "+w.Word+" CASCADE"); err != nil {
				t.Errorf("ValidateSchema accepts %q, which PostgreSQL does not take unquoted: %v", w.Word, err)
			}
		}
	}
}

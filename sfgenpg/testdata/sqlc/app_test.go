// Package app_test is the application of docs/go.md's sqlc recipe:
// TestSqlcRecipe (sfgenpg/sqlc_test.go) copies it into a module of its
// own beside the code sqlc generates there from the recipe's schema,
// queries and configuration, packages db (sql_package: pgx/v5) and stddb
// (database/sql), and runs it with go test against a database where
// sfgen is installed in ids with node 1/2 and the recipe's schema is
// applied, named by $SFGEN_SQLC_DSN. It imports sfgenpg only for
// TestPgxRegistered.
package app_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/sfgenpg"

	"example.com/app/db"
	"example.com/app/stddb"
)

type printer struct{ w *strings.Builder }

func (p printer) Println(a ...any) { p.w.WriteString(fmt.Sprintln(a...)) }

// pgxRecipe is docs/go.md's use of the code sqlc generates for pgx/v5,
// verbatim after its first line; TestPgx checks what it prints.
func pgxRecipe(ctx context.Context, conn *pgx.Conn, w *strings.Builder) error {
	fmt := printer{w}
	q := db.New(conn) // a *pgx.Conn, a pgxpool.Pool or a pgx.Tx
	first, err := q.CreatePost(ctx, db.CreatePostParams{Body: "hello"})
	if err != nil {
		return err // the id is ids.snowflake_next_id()'s, as an sfgen.ID
	}
	reply, err := q.CreatePost(ctx, db.CreatePostParams{
		Parent: sfgen.NullID{ID: first, Valid: true},
		Quoted: &first,
		Body:   "hi",
	})
	if err != nil {
		return err
	}
	p, err := q.GetPost(ctx, reply)
	fmt.Println(p.ID == reply, p.Parent.ID == first, *p.Quoted == first, p.ID.Datacenter(), p.ID.Machine(), err)
	p, err = q.GetPost(ctx, first)
	fmt.Println(p.Parent.Valid, p.Quoted == nil, err)
	replies, err := q.Replies(ctx, sfgen.NullID{ID: first, Valid: true})
	fmt.Println(len(replies), replies[0].ID == reply, err)
	return nil
	// Prints:
	// true true true 1 2 <nil>
	// false true <nil>
	// 1 true <nil>
}

// stdRecipe is pgxRecipe over database/sql (pgx's stdlib driver), with
// the code sqlc generates without sql_package.
func stdRecipe(ctx context.Context, sqlDB *sql.DB, w *strings.Builder) error {
	fmt := printer{w}
	q := stddb.New(sqlDB)
	first, err := q.CreatePost(ctx, stddb.CreatePostParams{Body: "hello"})
	if err != nil {
		return err
	}
	reply, err := q.CreatePost(ctx, stddb.CreatePostParams{
		Parent: sfgen.NullID{ID: first, Valid: true},
		Quoted: &first,
		Body:   "hi",
	})
	if err != nil {
		return err
	}
	p, err := q.GetPost(ctx, reply)
	fmt.Println(p.ID == reply, p.Parent.ID == first, *p.Quoted == first, p.ID.Datacenter(), p.ID.Machine(), err)
	p, err = q.GetPost(ctx, first)
	fmt.Println(p.Parent.Valid, p.Quoted == nil, err)
	replies, err := q.Replies(ctx, sfgen.NullID{ID: first, Valid: true})
	fmt.Println(len(replies), replies[0].ID == reply, err)
	return nil
	// Prints:
	// true true true 1 2 <nil>
	// false true <nil>
	// 1 true <nil>
}

// want is what both recipes print.
const want = "true true true 1 2 <nil>\nfalse true <nil>\n1 true <nil>\n"

func dsn(t *testing.T) string {
	s := os.Getenv("SFGEN_SQLC_DSN")
	if s == "" {
		t.Fatal("SFGEN_SQLC_DSN is not set: run TestSqlcRecipe in sfgenpg")
	}
	return s
}

func TestPgx(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var got strings.Builder
	if err := pgxRecipe(ctx, conn, &got); err != nil {
		t.Fatal(err)
	}
	if got.String() != want {
		t.Errorf("pgxRecipe printed\n%s\nwant\n%s", got.String(), want)
	}
	// docs/go.md shows pgxRecipe's // Prints: comment as its output.
	src, err := os.ReadFile("app_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(src), "func pgxRecipe(")
	_, prints, _ := strings.Cut(after, "\t// Prints:\n")
	prints, _, _ = strings.Cut(prints, "}\n")
	if prints = strings.ReplaceAll(prints, "\t// ", ""); prints != want {
		t.Errorf("pgxRecipe's // Prints: comment says\n%s\nwant\n%s", prints, want)
	}
}

// TestPgxRegistered runs pgxRecipe over a connection whose type map has
// sfgenpg.RegisterPgxTypes.
func TestPgxRegistered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	sfgenpg.RegisterPgxTypes(conn.TypeMap())
	var got strings.Builder
	if err := pgxRecipe(ctx, conn, &got); err != nil {
		t.Fatal(err)
	}
	if got.String() != want {
		t.Errorf("pgxRecipe printed\n%s\nwant\n%s", got.String(), want)
	}
}

func TestDatabaseSQL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sqlDB, err := sql.Open("pgx", dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	var got strings.Builder
	if err := stdRecipe(ctx, sqlDB, &got); err != nil {
		t.Fatal(err)
	}
	if got.String() != want {
		t.Errorf("stdRecipe printed\n%s\nwant\n%s", got.String(), want)
	}
}

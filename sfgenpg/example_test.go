package sfgenpg_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/pressly/goose/v3"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/sfgenpg"
)

// Install sfgen into a schema of its own at startup (or from a
// migration step): a first install, or the upgrades a newer module
// brings; then Check would return nil.
func ExampleInstall() {
	ctx := context.Background()
	db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	res, err := sfgenpg.Install(ctx, db, sfgenpg.InstallOptions{
		Schema: "ids",
		Layout: sfgen.Discord(),
		Node:   &sfgenpg.Node{Datacenter: 1, Machine: 2}, // this database's own
	})
	if err != nil {
		panic(err) // errors.Is(err, sfgenpg.ErrLayoutMismatch), ErrUntrustedSchema, ...
	}
	fmt.Println(res.Applied, res.Release, *res.Node)
}

// Check at startup that the database holds what this binary expects,
// and say what to do when it does not.
func ExampleCheck() {
	ctx := context.Background()
	db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	err = sfgenpg.Check(ctx, db, sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Discord()})
	var se *sfgenpg.SchemaError
	switch {
	case errors.Is(err, sfgenpg.ErrOlderRelease):
		// An upgrade is due: sfgenpg.Install, or the way it was installed.
		fmt.Println("upgrade:", err)
	case errors.As(err, &se):
		fmt.Println(se.Schema, se.Release, se.Fix)
	case err != nil:
		panic(err)
	}
}

// sfgen as the first step of an application's own goose migrations.
func ExampleGooseMigration() {
	ctx := context.Background()
	db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	app := os.DirFS("db/migrations") // 00002_orders.sql: CREATE TABLE orders (id bigint DEFAULT ids.snowflake_next_id() ...)
	p, err := goose.NewProvider(goose.DialectPostgres, db, app,
		goose.WithGoMigrations(sfgenpg.GooseMigration(1, sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Twitter()})))
	if err != nil {
		panic(err)
	}
	if _, err := p.Up(ctx); err != nil {
		panic(err)
	}
}

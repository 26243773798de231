package sfgenpg_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

// importerGoMod is the go.mod of a module outside this one that imports
// sfgen as an application would, through a replace directive to this
// checkout.
const importerGoMod = `module example.com/importer

go 1.26.0

require (
	github.com/jackc/pgx/v5 v5.13.0
	github.com/pressly/goose/v3 v3.30.1
	github.com/sfgen/sfgen v0.0.0
)

replace github.com/sfgen/sfgen => %s
`

// importerMain uses the public API as an importer would: Compose,
// Decompose, ParseLayout, NewGenerator, and IDs through pgx and
// database/sql against the database $SFGEN_IMPORTER_DSN names; the ID
// accessors; and issue 23's route for a Go application, each on a fresh
// database of its own: Install into ids with Discord's layout and node
// 1/2 and Check there; Check of an empty database; a database installed
// by release 1, Checked and upgraded; goose over migrations.FS, which
// leaves no node; and one goose Provider holding GooseMigration(1, ...)
// and the application's own file. It prints one line a check, and exits
// 1 at the first that fails.
const importerMain = `package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/sfgenpg"
	"github.com/sfgen/sfgen/migrations"
)

func check(what string, ok bool, got ...any) {
	if !ok {
		fmt.Println("FAIL", what, fmt.Sprint(got...))
		os.Exit(1)
	}
	fmt.Println("ok", what)
}

func main() {
	ctx := context.Background()

	id, err := sfgen.Compose(1288834975657, 1, 1, 0)
	check("compose", err == nil && id == 4194439168, id, err)
	p, err := sfgen.Decompose(1724551110456668202)
	check("decompose", err == nil && p == sfgen.Parts{Timestamp: 1700000000000, Datacenter: 3, Machine: 7, Sequence: 42}, p, err)
	_, err = sfgen.Compose(1288834975657, 32, 1, 0)
	var re *sfgen.RangeError
	check("range error", errors.As(err, &re) && re.Field == sfgen.FieldDatacenter && err.Error() == "datacenter 32 out of range [0, 31]", err)

	discord, err := sfgen.ParseLayout("discord")
	check("parse discord", err == nil && discord == sfgen.Discord(), discord, err)
	p, err = discord.Decompose(175928847299117063)
	check("discord vector", err == nil && p == sfgen.Parts{Timestamp: 1462015105796, Datacenter: 1, Machine: 0, Sequence: 7}, p, err)
	custom, err := sfgen.ParseLayout("epoch=0 timestamp=43 datacenter=4 machine=4 sequence=12")
	check("parse spec", err == nil && custom.Max(sfgen.FieldDatacenter) == 15, custom, err)
	_, err = sfgen.ParseLayout("epoch=0 timestamp=43 datacenter=4 machine=4")
	var le *sfgen.LayoutError
	check("parse error", errors.As(err, &le) && le.Part == "sequence" && errors.Is(err, sfgen.ErrInvalidLayout), err)

	g, err := custom.NewGenerator(15, 3)
	check("new generator", err == nil, err)
	a, errA := g.Next()
	b, errB := g.Next()
	pb, _ := custom.Decompose(b)
	check("generate", errA == nil && errB == nil && b > a && pb.Datacenter == 15 && pb.Machine == 3, a, b, errA, errB)

	dsn := os.Getenv("SFGEN_IMPORTER_DSN")
	conn, err := pgx.Connect(ctx, dsn)
	check("pgx connect", err == nil, err)
	defer conn.Close(ctx)
	var got sfgen.ID
	var null *sfgen.ID
	err = conn.QueryRow(ctx, "SELECT $1::bigint, NULL::bigint", b).Scan(&got, &null)
	check("pgx scan", err == nil && got == b && null == nil, got, null, err)
	err = conn.QueryRow(ctx, "SELECT NULL::bigint").Scan(&got)
	check("pgx NULL refused", errors.Is(err, sfgen.ErrNullID), err)
	err = conn.QueryRow(ctx, "SELECT -1::bigint").Scan(&got)
	check("pgx negative refused", errors.Is(err, sfgen.ErrOutOfRange), err)

	db, err := sql.Open("pgx", dsn)
	check("database/sql open", err == nil, err)
	defer db.Close()
	var n sfgen.NullID
	err = db.QueryRowContext(ctx, "SELECT $1::bigint, NULL::bigint", id).Scan(&got, &n)
	check("database/sql scan", err == nil && got == id && !n.Valid, got, n, err)
	err = db.QueryRowContext(ctx, "SELECT NULL::bigint").Scan(&got)
	check("database/sql NULL refused", errors.Is(err, sfgen.ErrNullID), err)
	err = db.QueryRowContext(ctx, "SELECT -1::bigint").Scan(&got)
	check("database/sql negative refused", errors.Is(err, sfgen.ErrOutOfRange), err)

	w := sfgen.ID(4194439168)
	check("ID accessors", w.Time().Format(time.RFC3339Nano) == "2010-11-04T01:42:55.657Z" && w.Datacenter() == 1 && w.Machine() == 1 && w.Sequence() == 0,
		w.Time(), w.Datacenter(), w.Machine(), w.Sequence())

	open := func(env string) *sql.DB {
		db, err := sql.Open("pgx", os.Getenv(env))
		check("open "+env, err == nil, err)
		return db
	}
	// Install into ids with Discord's layout and node 1/2; Check.
	ids := open("SFGEN_IMPORTER_IDS_DSN")
	defer ids.Close()
	o := sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Discord(), Node: &sfgenpg.Node{Datacenter: 1, Machine: 2}}
	res, err := sfgenpg.Install(ctx, ids, o)
	check("install ids discord 1/2", err == nil && res.Release == sfgenpg.Release && res.Layout == sfgen.Discord() && res.Node != nil && *res.Node == *o.Node, res, err)
	var made sfgen.ID
	err = ids.QueryRowContext(ctx, "SELECT ids.snowflake_next_id()").Scan(&made)
	mp, _ := sfgen.Discord().Decompose(made)
	check("an ID of that node and layout", err == nil && mp.Datacenter == 1 && mp.Machine == 2 && time.Since(mp.Time()).Abs() < time.Minute, mp, err)
	check("check ids", sfgenpg.Check(ctx, ids, o) == nil)
	err = sfgenpg.Check(ctx, ids, sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Twitter()})
	check("check twitter on ids: layout mismatch", errors.Is(err, sfgenpg.ErrLayoutMismatch), err)

	empty := open("SFGEN_IMPORTER_EMPTY_DSN")
	defer empty.Close()
	err = sfgenpg.Check(ctx, empty, o)
	check("check an empty database: not installed", errors.Is(err, sfgenpg.ErrNotInstalled), err)

	// A database installed by release 1 (its file from migrations.FS),
	// with a node of its own.
	r1 := open("SFGEN_IMPORTER_R1_DSN")
	defer r1.Close()
	p1, err := goose.NewProvider(goose.DialectPostgres, r1, migrations.FS, goose.WithTableName("sfgen_db_version"))
	check("goose provider", err == nil, err)
	_, err = p1.UpTo(ctx, 1)
	check("release 1 installed", err == nil, err)
	_, err = r1.ExecContext(ctx, "SELECT public.snowflake_set_node(3, 4)")
	check("release 1 node 3/4", err == nil, err)
	tw := sfgenpg.InstallOptions{Layout: sfgen.Twitter()}
	err = sfgenpg.Check(ctx, r1, tw)
	var se *sfgenpg.SchemaError
	check("check release 1: older release", errors.Is(err, sfgenpg.ErrOlderRelease) && errors.As(err, &se) && se.Release == 1, err)
	res, err = sfgenpg.Install(ctx, r1, tw)
	check("install upgrades release 1, node kept", err == nil && res.Release == sfgenpg.Release && len(res.Applied) == 1 && res.Node != nil && *res.Node == (sfgenpg.Node{Datacenter: 3, Machine: 4}), res, err)
	check("check after the upgrade", sfgenpg.Check(ctx, r1, tw) == nil)

	// goose over migrations.FS on a fresh database: no node.
	fresh := open("SFGEN_IMPORTER_GOOSE_DSN")
	defer fresh.Close()
	pf, err := goose.NewProvider(goose.DialectPostgres, fresh, migrations.FS, goose.WithTableName("sfgen_db_version"))
	check("goose provider", err == nil, err)
	_, err = pf.Up(ctx)
	check("goose up over migrations.FS", err == nil, err)
	_, err = fresh.ExecContext(ctx, "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT public.snowflake_next_id(), item text)")
	check("table", err == nil, err)
	_, err = fresh.ExecContext(ctx, "INSERT INTO orders (item) VALUES ('tea')")
	check("insert without a node: ErrNoNode", errors.Is(sfgenpg.DBError(err), sfgenpg.ErrNoNode), err)
	err = sfgenpg.Check(ctx, fresh, tw)
	check("check without a node: ErrNoNode", errors.Is(err, sfgenpg.ErrNoNode), err)

	// One Provider: sfgen's migration and the application's own file.
	app := open("SFGEN_IMPORTER_APP_DSN")
	defer app.Close()
	files := fstest.MapFS{"00002_orders.sql": {Data: []byte("-- +goose Up\nCREATE TABLE orders (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), item text);\n")}}
	pa, err := goose.NewProvider(goose.DialectPostgres, app, files,
		goose.WithGoMigrations(sfgenpg.GooseMigration(1, sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Twitter(), Node: &sfgenpg.Node{Datacenter: 1, Machine: 3}})))
	check("app provider", err == nil, err)
	results, err := pa.Up(ctx)
	check("one Up: sfgen, then the app's file", err == nil && len(results) == 2, len(results), err)
	var order sfgen.ID
	err = app.QueryRowContext(ctx, "INSERT INTO orders (item) VALUES ('tea') RETURNING id").Scan(&order)
	check("an order's ID of node 1/3", err == nil && order.Datacenter() == 1 && order.Machine() == 3, order, err)
}
`

// TestImportFromAnotherModule builds a separate module that imports
// github.com/sfgen/sfgen through a replace directive to this checkout, as
// an application would, and runs it against a real PostgreSQL: the
// public API must be importable (nothing under internal/ in its
// signatures that an importer has to name) and must work. It uses the
// module cache and this module's go.sum, so it needs no network when the
// cache holds this module's dependencies, and the Go module proxy at
// most.
func TestImportFromAnotherModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	dsn := pgtest.DSN(t)
	root, err := filepath.Abs("..") // the module's root
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"go.mod":  strings.Replace(importerGoMod, "%s", root, 1),
		"go.sum":  string(sum),
		"main.go": importerMain,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "importer")
	build := exec.CommandContext(ctx, goTool(t), "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in a module importing sfgen: %v\n%s", err, out)
	}
	run := exec.CommandContext(ctx, bin)
	run.Env = append(os.Environ(), "SFGEN_IMPORTER_DSN="+dsn)
	for _, env := range []string{"IDS", "EMPTY", "R1", "GOOSE", "APP"} {
		run.Env = append(run.Env, "SFGEN_IMPORTER_"+env+"_DSN="+pgtest.DSN(t))
	}
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	err = run.Run()
	t.Logf("importer:\n%s", out.String())
	if err != nil {
		t.Fatalf("the importing program failed: %v", err)
	}
	want := []string{
		"compose", "decompose", "range error", "parse discord", "discord vector", "parse spec", "parse error",
		"new generator", "generate", "pgx connect", "pgx scan", "pgx NULL refused", "pgx negative refused",
		"database/sql open", "database/sql scan", "database/sql NULL refused", "database/sql negative refused",
		"ID accessors",
		"open SFGEN_IMPORTER_IDS_DSN", "install ids discord 1/2", "an ID of that node and layout", "check ids", "check twitter on ids: layout mismatch",
		"open SFGEN_IMPORTER_EMPTY_DSN", "check an empty database: not installed",
		"open SFGEN_IMPORTER_R1_DSN", "goose provider", "release 1 installed", "release 1 node 3/4", "check release 1: older release",
		"install upgrades release 1, node kept", "check after the upgrade",
		"open SFGEN_IMPORTER_GOOSE_DSN", "goose provider", "goose up over migrations.FS", "table", "insert without a node: ErrNoNode", "check without a node: ErrNoNode",
		"open SFGEN_IMPORTER_APP_DSN", "app provider", "one Up: sfgen, then the app's file", "an order's ID of node 1/3",
	}
	for i := range want {
		want[i] = "ok " + want[i]
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the importer printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

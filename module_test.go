package sfgen_test

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
	github.com/sfgen/sfgen v0.0.0
)

replace github.com/sfgen/sfgen => %s
`

// importerMain uses the public API as an importer would: Compose,
// Decompose, ParseLayout, NewGenerator, and IDs through pgx and
// database/sql against the database $SFGEN_IMPORTER_DSN names. It prints
// one line a check, and exits 1 at the first that fails.
const importerMain = `package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/sfgen/sfgen"
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
	root, err := filepath.Abs(".")
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
	}
	for i := range want {
		want[i] = "ok " + want[i]
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the importer printed\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

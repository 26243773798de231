package sfgenpg_test

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/sfgenpg"
)

// sqlcVersion is the sqlc that docs/go.md's recipe names and
// TestSqlcRecipe runs.
const sqlcVersion = "v1.31.1"

// sqlcCommand builds sqlc at sqlcVersion from the Go module proxy into a
// temporary directory, as `go install` does for an application, outside
// this module (whose go.mod does not require it). It builds without cgo:
// sqlc then parses PostgreSQL with pg_query compiled to WebAssembly
// (github.com/wasilibs/go-pgquery) instead of the C library, so no C
// compiler is needed and the build takes about a minute on 2 cores, not
// five; the Go build cache keeps it after the first.
func sqlcCommand(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool(t), "install", "github.com/sqlc-dev/sqlc/cmd/sqlc@"+sqlcVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "CGO_ENABLED=0", "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install sqlc %s: %v\n%s", sqlcVersion, err, out)
	}
	return filepath.Join(bin, "sqlc")
}

// sqlcRecipe returns the blocks of docs/go.md's sqlc section: the
// schema, the queries (its first two ```sql blocks) and the
// configuration (its ```yaml block).
func sqlcRecipe(t *testing.T) (schema, queries, config string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "go.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## sqlc\n")
	if !ok {
		t.Fatal("docs/go.md has no ## sqlc section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := func(lang string) []string {
		var out []string
		for _, b := range strings.Split(section, "```"+lang+"\n")[1:] {
			code, _, ok := strings.Cut(b, "```\n")
			if !ok {
				t.Fatalf("docs/go.md: a ```%s block that does not end", lang)
			}
			out = append(out, code)
		}
		return out
	}
	sqls, yamls := blocks("sql"), blocks("yaml")
	if len(sqls) != 2 || len(yamls) != 1 {
		t.Fatalf("docs/go.md's sqlc section has %d ```sql and %d ```yaml blocks, want 2 and 1", len(sqls), len(yamls))
	}
	return sqls[0], sqls[1], yamls[0]
}

// TestSqlcRecipe runs docs/go.md's sqlc recipe: sqlc generate over its
// schema, queries and configuration (sql_package: pgx/v5 into package
// db, and the same configuration without sql_package, database/sql, into
// package stddb), then, in a module of its own that requires sfgen
// through a replace directive to this checkout, go test over the
// generated code and testdata/sqlc/app_test.go, against a database where
// sfgenpg.Install put sfgen into ids with node 1/2 and the recipe's
// schema is applied. The generated code must compile, write and scan
// sfgen.ID, sfgen.NullID and *sfgen.ID, and the recipe's Go must print
// what docs/go.md says, over pgx (with and without RegisterPgxTypes) and
// over database/sql.
func TestSqlcRecipe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sqlc and a module")
	}
	schema, queries, config := sqlcRecipe(t)
	std := config
	for _, r := range [][2]string{{"        sql_package: pgx/v5\n", ""}, {"package: db\n", "package: stddb\n"}, {"out: db\n", "out: stddb\n"}} {
		if !strings.Contains(std, r[0]) {
			t.Fatalf("docs/go.md's sqlc.yaml has no %q", r[0])
		}
		std = strings.Replace(std, r[0], r[1], 1)
	}
	root, err := filepath.Abs("..") // the module's root
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	app, err := os.ReadFile(filepath.Join("testdata", "sqlc", "app_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"go.mod":        "module example.com/app\n\ngo 1.26.0\n\nrequire (\n\tgithub.com/jackc/pgx/v5 v5.13.0\n\tgithub.com/sfgen/sfgen v0.0.0\n)\n\nreplace github.com/sfgen/sfgen => " + root + "\n",
		"go.sum":        string(sum),
		"schema.sql":    schema,
		"query.sql":     queries,
		"sqlc.yaml":     config,
		"sqlc-std.yaml": std,
		"app_test.go":   string(app),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	sqlc := sqlcCommand(t)
	for _, file := range []string{"sqlc.yaml", "sqlc-std.yaml"} {
		cmd := exec.Command(sqlc, "generate", "-f", file)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sqlc generate -f %s: %v\n%s", file, err, out)
		}
	}
	// The types docs/go.md says sqlc generates.
	for _, pkg := range []string{"db", "stddb"} {
		models, err := os.ReadFile(filepath.Join(dir, pkg, "models.go"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "type Post struct {\n\tID     sfgen.ID\n\tParent sfgen.NullID\n\tQuoted *sfgen.ID\n\tBody   string\n}\n"; !strings.Contains(string(models), want) {
			t.Errorf("sqlc generated %s/models.go\n%s\nwithout\n%s", pkg, models, want)
		}
	}

	dsn := pgtest.DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := sfgenpg.Install(ctx, db, sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Twitter(), Node: &sfgenpg.Node{Datacenter: 1, Machine: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		t.Fatalf("the recipe's schema: %v", err)
	}

	cmd := exec.CommandContext(ctx, goTool(t), "test", "-count=1", "-v", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SFGEN_SQLC_DSN="+dsn, "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("go test over the generated code:\n%s", out.String())
	if err != nil {
		t.Fatalf("go test over the generated code: %v", err)
	}
	for _, test := range []string{"TestPgx", "TestPgxRegistered", "TestDatabaseSQL"} {
		if !strings.Contains(out.String(), "--- PASS: "+test+" ") {
			t.Errorf("%s did not pass", test)
		}
	}
	var posts int
	// Datacenter 1, machine 2: bits 21..12 are 1<<5 | 2.
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM post WHERE (id >> 12) & 1023 = 34").Scan(&posts); err != nil || posts != 6 {
		t.Errorf("%d posts of node 1/2 (%v), want 6", posts, err)
	}
}

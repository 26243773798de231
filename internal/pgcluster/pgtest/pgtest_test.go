package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestDSN(t *testing.T) {
	if os.Getenv("DATABASE_URL") != "" {
		t.Skip("DATABASE_URL is set, so DSN returns it (TestDSNFromEnv)")
	}
	ctx := context.Background()
	var first string
	t.Run("create", func(t *testing.T) {
		dsn := DSN(t)
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&first); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE t (id bigint)"); err != nil {
			t.Fatal(err)
		}
		if other := DSN(t); other == dsn {
			t.Errorf("two DSN calls gave the same database %s", dsn)
		}
	})
	if first == "" {
		t.FailNow()
	}
	// The subtest's database was dropped in its cleanup.
	c, err := cluster()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", first).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s still exists after its test", first)
	}
}

func TestDSNFromEnv(t *testing.T) {
	const url = "postgres://u:p@db.invalid:5432/x?sslmode=disable"
	t.Setenv("DATABASE_URL", url)
	if got := DSN(t); got != url {
		t.Errorf("DSN = %q, want $DATABASE_URL %q", got, url)
	}
}

func TestDBName(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int64
		want string
	}{
		{"TestFoo/sub case", 7, "t7_testfoo_sub_case"},
		{"TestÄ", 1, "t1_test_"},
	} {
		if got := dbName(tc.name, tc.n); got != tc.want {
			t.Errorf("dbName(%q, %d) = %q, want %q", tc.name, tc.n, got, tc.want)
		}
	}
	long := dbName(string(make([]byte, 200)), 123456)
	if len(long) > 63 {
		t.Errorf("dbName gave %d bytes", len(long))
	}
}

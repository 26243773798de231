package pause_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sfgen/sfgen/internal/pgcluster/pause"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// sessions skips t where gdb cannot pause a backend, and otherwise returns
// two sessions on a fresh database holding sequences s and other, session
// a's backend pid, and s's oid.
func sessions(t *testing.T, ctx context.Context) (a, b *pgx.Conn, pid int, sOID uint32) {
	t.Helper()
	if err := pause.Available(); err != nil {
		t.Skip(err)
	}
	if pgtest.External() {
		t.Skipf("the server $%s names is not a local process that gdb can attach to", pgtest.EnvVar)
	}
	dsn := pgtest.DSN(t)
	connect := func() *pgx.Conn {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	a, b = connect(), connect()
	if _, err := b.Exec(ctx, "CREATE SEQUENCE s; CREATE SEQUENCE other"); err != nil {
		t.Fatal(err)
	}
	if err := b.QueryRow(ctx, "SELECT 's'::regclass::oid").Scan(&sOID); err != nil {
		t.Fatal(err)
	}
	return a, b, int(a.PgConn().PID()), sOID
}

// at pauses pid at fn as pause.At does, resuming it when t ends.
func at(t *testing.T, ctx context.Context, pid int, fn string, arg0 uint64, skip int) *pause.Pause {
	t.Helper()
	p, err := pause.At(ctx, pid, fn, arg0, skip)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Resume(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// run runs query on c, whose backend p pauses, in a goroutine, scanning its
// one row into n int8 values, and returns a channel that receives the
// outcome. When t ends it resumes the backend and waits for the query to
// end, so that c is idle when it is closed.
func run(t *testing.T, ctx context.Context, p *pause.Pause, c *pgx.Conn, query string, n int) <-chan outcome {
	done, finished := make(chan outcome, 1), make(chan struct{})
	go func() {
		defer close(finished)
		var o outcome
		o.values = make([]int64, n)
		dst := make([]any, n)
		for i := range dst {
			dst[i] = &o.values[i]
		}
		o.err = c.QueryRow(ctx, query).Scan(dst...)
		done <- o
	}()
	t.Cleanup(func() {
		_ = p.Resume() // at's cleanup reports its error
		<-finished
	})
	return done
}

type outcome struct {
	values []int64
	err    error
}

// lastValue returns pg_sequence_last_value(seq): nil before the first
// nextval or setval.
func lastValue(t *testing.T, ctx context.Context, c *pgx.Conn, seq string) *int64 {
	t.Helper()
	var v *int64
	if err := c.QueryRow(ctx, "SELECT pg_sequence_last_value($1::regclass)", seq).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func show(v *int64) string {
	if v == nil {
		return "NULL"
	}
	return strconv.FormatInt(*v, 10)
}

// frozen fails t unless pid is in a ptrace stop (state t in /proc/pid/stat).
func frozen(t *testing.T, pid int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) == 0 || f[0] != "t" {
		t.Fatalf("backend %d is in state %s, want t (stopped by the debugger)", pid, strings.Join(f[:min(len(f), 1)], ""))
	}
}

// notReturned fails t if the query behind done has returned.
func notReturned(t *testing.T, done <-chan outcome) {
	t.Helper()
	select {
	case o := <-done:
		t.Fatalf("the paused session's query returned %v, %v while it should be frozen", o.values, o.err)
	default:
	}
}

// result waits for the query behind done and checks what it returned.
func result(t *testing.T, ctx context.Context, done <-chan outcome, want ...int64) {
	t.Helper()
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatalf("the resumed session's query: %v", o.err)
		}
		for i := range want {
			if o.values[i] != want[i] {
				t.Fatalf("the resumed session's query returned %v, want %v", o.values, want)
			}
		}
	case <-ctx.Done():
		t.Fatalf("the resumed session's query did not return: %v", ctx.Err())
	}
}

func TestPauseSetval(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b, pid, sOID := sessions(t, ctx)

	p := at(t, ctx, pid, "setval_oid", uint64(sOID), 0)
	done := run(t, ctx, p, a, "SELECT setval('other', 5), setval('s', 42)", 2)
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	frozen(t, pid)
	if v := lastValue(t, ctx, b, "other"); v == nil || *v != 5 {
		t.Errorf("while paused at setval('s'), other's last value is %s, want 5: the breakpoint should have let setval('other') pass", show(v))
	}
	if v := lastValue(t, ctx, b, "s"); v != nil && *v == 42 {
		t.Errorf("while paused at setval('s'), s's last value is already 42")
	}
	notReturned(t, done)

	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := p.Resume(); err != nil {
		t.Errorf("second Resume: %v", err)
	}
	result(t, ctx, done, 5, 42)
	if v := lastValue(t, ctx, b, "s"); v == nil || *v != 42 {
		t.Errorf("after Resume, s's last value is %s, want 42", show(v))
	}
}

func TestPauseSkip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b, pid, sOID := sessions(t, ctx)

	// Stop at s's second nextval; other's calls, between, do not count.
	p := at(t, ctx, pid, "nextval_oid", uint64(sOID), 1)
	done := run(t, ctx, p, a, "SELECT nextval('s'), nextval('other'), nextval('other'), nextval('s'), nextval('other')", 5)
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	frozen(t, pid)
	if v := lastValue(t, ctx, b, "s"); v == nil || *v != 1 {
		t.Errorf("while paused at s's second nextval, s's last value is %s, want 1", show(v))
	}
	if v := lastValue(t, ctx, b, "other"); v == nil || *v != 2 {
		t.Errorf("while paused at s's second nextval, other's last value is %s, want 2", show(v))
	}
	notReturned(t, done)

	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	result(t, ctx, done, 1, 1, 2, 2, 3)
}

// TestResumeBeforeHit resumes a backend that never reached the breakpoint:
// it must run on, the breakpoint gone, and Wait must say so.
func TestResumeBeforeHit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, _, pid, sOID := sessions(t, ctx)

	p := at(t, ctx, pid, "nextval_oid", uint64(sOID), 0)
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx); err == nil {
		t.Error("Wait after Resume, with the breakpoint never reached, returned nil")
	}
	var v int64
	if err := a.QueryRow(ctx, "SELECT nextval('s')").Scan(&v); err != nil || v != 1 {
		t.Fatalf("nextval('s') after Resume: %d, %v; want 1", v, err)
	}
	if got := int(a.PgConn().PID()); got != pid {
		t.Fatalf("backend pid changed from %d to %d", pid, got)
	}
}

// TestContextEndReleases checks that the end of At's context lets a
// frozen backend go.
func TestContextEndReleases(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, _, pid, sOID := sessions(t, ctx)

	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	p := at(t, pctx, pid, "setval_oid", uint64(sOID), 0)
	done := run(t, ctx, p, a, "SELECT setval('s', 7)", 1)
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	frozen(t, pid)
	notReturned(t, done)
	pcancel()
	result(t, ctx, done, 7)
}

func TestAtRefusesOtherProcesses(t *testing.T) {
	if err := pause.Available(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if p, err := pause.At(ctx, os.Getpid(), "setval_oid", 0, 0); err == nil {
		p.Resume()
		t.Fatal("At attached to the test process itself")
	}
	if p, err := pause.At(ctx, 1, "setval_oid; kill", 0, 0); err == nil {
		p.Resume()
		t.Fatal("At took a function name with a command in it")
	}
}

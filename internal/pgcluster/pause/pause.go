// Package pause stops a PostgreSQL backend at a given C function and holds
// it there until the test lets it go, so that tests can reproduce races
// deterministically instead of hoping for an unlucky schedule.
//
// [At] attaches gdb to the backend's process, sets a breakpoint on the
// entry of a function the postgres binary exports (setval_oid, nextval_oid:
// the server has no debug info, but its dynamic symbol table names these),
// and lets the backend run on. The breakpoint can be limited to fmgr calls
// whose first argument is a given Datum (a sequence's oid, say) and can let
// a number of matching calls pass first. [Pause.Wait] returns once the
// backend is frozen on the breakpoint; other sessions then run while it
// stays frozen, and [Pause.Resume] removes the breakpoint, detaches gdb and
// lets the backend finish what it was doing.
//
// Use it as
//
//	if err := pause.Available(); err != nil {
//		t.Skip(err)
//	}
//	p, err := pause.At(ctx, pid, "setval_oid", uint64(seqOID), 0)
//	if err != nil {
//		t.Fatal(err)
//	}
//	t.Cleanup(func() { p.Resume() })
//	// In a goroutine, on the session whose backend is pid: SELECT setval(...).
//	if err := p.Wait(ctx); err != nil {
//		t.Fatal(err)
//	}
//	// The backend is frozen at setval_oid's entry; look from other sessions.
//	err = p.Resume()
//
// A backend is never left frozen for good: the breakpoint is removed and
// gdb detached when Resume is called, when the context given to At ends,
// and, because gdb quits (detaching) when its standard input closes, when
// the test process dies.
//
// It needs Linux, gdb on PATH, a server on this machine, and the right to
// ptrace the server's processes (root with CAP_SYS_PTRACE when, as under
// [github.com/sfgen/sfgen/internal/pgcluster], the server runs as the OS
// user postgres). [Available] says whether that holds here, and why not.
//
// # Limits
//
// The breakpoint is on the function's first instruction, before it has
// done anything (setval_oid has not yet locked the sequence), and only on
// symbols of the postgres executable itself, not of extension libraries,
// whose symbols gdb is told not to read. The argument filter takes the
// first argument register ($rdi on x86-64, $x0 on arm64; the tests have run
// on x86-64 only) as a FunctionCallInfo and compares the 8-byte word at
// offset 32, args[0].value in PostgreSQL 12 and later on 64-bit platforms;
// for a function that is not V1 fmgr, pass arg0 0. Backends are
// single-threaded; gdb runs in non-stop mode, which stops only the thread
// that hits the breakpoint.
package pause

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// argRegister names, per GOARCH, the register holding a C function's first
// argument at its entry: for a V1 fmgr function, the FunctionCallInfo.
var argRegister = map[string]string{
	"amd64": "$rdi",
	"arm64": "$x0",
}

// arg0Offset is the offset of args[0].value in FunctionCallInfoBaseData on
// a 64-bit platform: flinfo, context and resultinfo (three pointers, 24
// bytes), fncollation (4), isnull (1), padding (1) and nargs (2) come first.
const arg0Offset = 32

// releaseTimeout bounds how long releasing a backend may take before gdb is
// killed (which also detaches it).
const releaseTimeout = 10 * time.Second

// Available reports whether gdb can attach to the test server's backends
// here, or why not, so that tests can skip with the reason. It checks once
// per process: the platform, gdb on PATH, the kernel's ptrace restrictions,
// CAP_SYS_PTRACE when running as root (the server then runs as another
// user), and that gdb can attach to and detach from a child process.
func Available() error { return available() }

var available = sync.OnceValue(probe)

func probe() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("pause: needs Linux (ptrace and /proc), this is %s", runtime.GOOS)
	}
	if _, ok := argRegister[runtime.GOARCH]; !ok {
		return fmt.Errorf("pause: does not know where %s passes a function's first argument", runtime.GOARCH)
	}
	if _, err := exec.LookPath("gdb"); err != nil {
		return fmt.Errorf("pause: needs gdb: %w", err)
	}
	capPtrace := hasCapSysPtrace()
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		switch scope := strings.TrimSpace(string(b)); {
		case scope == "3":
			return errors.New("pause: kernel.yama.ptrace_scope is 3, which forbids ptrace attach")
		case scope != "0" && !capPtrace:
			return fmt.Errorf("pause: kernel.yama.ptrace_scope is %s and this process lacks CAP_SYS_PTRACE", scope)
		}
	}
	if os.Geteuid() == 0 && !capPtrace {
		return errors.New("pause: running as root without CAP_SYS_PTRACE, so gdb cannot attach to the server, which runs as another user (give the container --cap-add=SYS_PTRACE)")
	}
	// Try it for real: seccomp filters and broken gdb installations show
	// only this way.
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		return fmt.Errorf("pause: start a process to probe gdb with: %w", err)
	}
	defer func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := attach(ctx, child.Process.Pid)
	if err != nil {
		return fmt.Errorf("pause: probe: %w", err)
	}
	if err := s.release(-1); err != nil {
		return fmt.Errorf("pause: probe: %w", err)
	}
	return nil
}

// hasCapSysPtrace reports whether CAP_SYS_PTRACE (bit 19) is in this
// process's effective capabilities.
func hasCapSysPtrace() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<19) != 0
		}
	}
	return false
}

// A Pause is a breakpoint that gdb holds in one backend. Its methods may be
// called from any goroutine.
type Pause struct {
	s    *session
	pid  int
	fn   string
	bp   int // gdb's breakpoint number
	base int // stops recorded before the backend was let run

	once      sync.Once
	resumeErr error
	resuming  chan struct{} // closed when Resume starts
}

// At attaches gdb to backend process pid and sets a breakpoint at the entry
// of fn, a function the postgres binary exports (setval_oid, nextval_oid).
// When arg0 is not 0, the breakpoint matches only calls whose first fmgr
// argument, args[0].value of the FunctionCallInfo fn gets, equals arg0: for
// setval_oid and nextval_oid, the sequence's oid. The first skip matching
// calls pass; the next one stops the backend. At returns once gdb holds the
// breakpoint and the backend runs again.
//
// fn must be a V1 fmgr function (Datum fn(PG_FUNCTION_ARGS)) when arg0 is
// not 0; with arg0 0 any exported function will do. When ctx ends, the
// backend is let go as by [Pause.Resume]; callers should also call Resume
// in a t.Cleanup, so that a failing test never leaves the backend frozen.
func At(ctx context.Context, pid int, fn string, arg0 uint64, skip int) (*Pause, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if pid <= 0 {
		return nil, fmt.Errorf("pause: pid %d: not a process id", pid)
	}
	if !isSymbol(fn) {
		return nil, fmt.Errorf("pause: %q: not a C function name", fn)
	}
	if skip < 0 {
		return nil, fmt.Errorf("pause: skip %d: want 0 or more", skip)
	}
	if err := isPostgres(pid); err != nil {
		return nil, err
	}
	s, err := attach(ctx, pid)
	if err != nil {
		return nil, fmt.Errorf("pause: %s in process %d: %w", fn, pid, err)
	}
	p := &Pause{s: s, pid: pid, fn: fn, resuming: make(chan struct{})}
	if err := p.arm(ctx, arg0, skip); err != nil {
		_ = s.release(-1)
		return nil, fmt.Errorf("pause: %s in process %d: %w", fn, pid, err)
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = p.Resume()
		case <-s.exited:
		}
	}()
	return p, nil
}

// arm sets the breakpoint and lets the backend run.
func (p *Pause) arm(ctx context.Context, arg0 uint64, skip int) error {
	insert := "-break-insert"
	if arg0 != 0 {
		cond := fmt.Sprintf("*(unsigned long *)(%s + %d) == %dUL", argRegister[runtime.GOARCH], arg0Offset, arg0)
		insert += " -c " + strconv.Quote(cond)
	}
	// *fn is fn's first instruction: gdb skips no prologue, so the
	// argument registers still hold the arguments.
	res, err := p.s.command(ctx, insert+" *"+p.fn)
	if err != nil {
		return fmt.Errorf("set breakpoint: %w", err)
	}
	if p.bp, err = strconv.Atoi(field(res, "number")); err != nil {
		return fmt.Errorf("set breakpoint: no breakpoint number in %q", res)
	}
	if skip > 0 {
		// gdb counts a hit against the ignore count only when the
		// condition holds, so calls with other arguments do not count.
		if _, err := p.s.command(ctx, fmt.Sprintf("-break-after %d %d", p.bp, skip)); err != nil {
			return fmt.Errorf("set ignore count: %w", err)
		}
	}
	p.s.mu.Lock()
	p.base = len(p.s.stops)
	runs := p.s.runs
	p.s.mu.Unlock()
	if _, err := p.s.command(ctx, "-exec-continue --all"); err != nil {
		return fmt.Errorf("continue: %w", err)
	}
	// gdb answers ^running before it reports *running; wait for the
	// latter, so that Resume knows the backend runs.
	if err := p.s.waitFor(ctx, func() bool { return p.s.runs > runs }); err != nil {
		return fmt.Errorf("continue: %w", err)
	}
	return nil
}

// Wait blocks until the backend has stopped at the breakpoint, or ctx
// ends. When it returns nil the backend is frozen at the entry of the
// function, and stays so until [Pause.Resume] (or the end of At's context).
// It returns an error if the backend stopped for another reason (a fatal
// signal), exited, or was resumed first.
func (p *Pause) Wait(ctx context.Context) error {
	s := p.s
	for {
		s.mu.Lock()
		stops := s.stops[p.base:]
		changed := s.changed
		s.mu.Unlock()
		for _, st := range stops {
			switch reason := field(st, "reason"); {
			case reason == "breakpoint-hit" && field(st, "bkptno") == strconv.Itoa(p.bp):
				return nil
			case strings.HasPrefix(reason, "exited"):
				return fmt.Errorf("pause: %s in process %d: the backend exited (%s) before reaching the breakpoint", p.fn, p.pid, reason)
			case reason == "signal-received" && field(st, "signal-name") == "0":
				return fmt.Errorf("pause: %s in process %d: resumed before the backend reached the breakpoint", p.fn, p.pid)
			case reason == "signal-received":
				return fmt.Errorf("pause: %s in process %d: the backend stopped on %s, not at the breakpoint", p.fn, p.pid, field(st, "signal-name"))
			}
		}
		select {
		case <-p.resuming:
			return fmt.Errorf("pause: %s in process %d: resumed before the backend reached the breakpoint", p.fn, p.pid)
		case <-s.exited:
			return fmt.Errorf("pause: %s in process %d: gdb exited before the backend reached the breakpoint%s", p.fn, p.pid, s.transcript())
		case <-ctx.Done():
			return fmt.Errorf("pause: %s in process %d: waiting for the backend to reach the breakpoint: %w", p.fn, p.pid, ctx.Err())
		case <-changed:
		}
	}
}

// Resume deletes the breakpoint, detaches gdb and lets the backend run on,
// whether or not it reached the breakpoint. It may be called more than
// once, and concurrently with Wait; later calls return the first's result.
func (p *Pause) Resume() error {
	p.once.Do(func() {
		close(p.resuming)
		if err := p.s.release(p.bp); err != nil {
			p.resumeErr = fmt.Errorf("pause: %s in process %d: resume: %w", p.fn, p.pid, err)
		}
	})
	return p.resumeErr
}

// Close is Resume, for defer and io.Closer.
func (p *Pause) Close() error { return p.Resume() }

// isSymbol reports whether fn looks like a C identifier, so that it cannot
// smuggle anything else into a gdb command.
func isSymbol(fn string) bool {
	for i, r := range fn {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return fn != ""
}

// isPostgres checks that pid runs a postgres binary, so that a pid from a
// server elsewhere (whose pids mean nothing here) never gets an unrelated
// local process stopped.
func isPostgres(pid int) error {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return fmt.Errorf("pause: process %d: %w (is the server local?)", pid, err)
	}
	if !strings.HasPrefix(filepath.Base(exe), "postgres") {
		return fmt.Errorf("pause: process %d runs %s, not postgres (is the server local?)", pid, exe)
	}
	return nil
}

// A session is one gdb process, driven over its machine interface (MI).
type session struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr tailWriter
	exited chan struct{} // closed once gdb's output has ended and it exited

	wmu sync.Mutex // serializes writes to stdin

	mu      sync.Mutex
	token   int
	pending map[int]chan string // token → result record ("done,..." or "error,...")
	stops   []string            // *stopped records, oldest first
	running bool                // the backend runs (a *running came after the last *stopped)
	runs    int                 // *running records seen
	changed chan struct{}       // closed and replaced whenever stops or running change
	tail    []string            // last lines of output, for errors
	waitErr error               // gdb's exit status, once exited is closed
}

// attach starts gdb and attaches it to pid, which it leaves stopped.
//
// gdb runs in non-stop mode with asynchronous MI so that it reads commands
// while the backend runs: Resume before the breakpoint is reached then
// stops the backend's thread with -exec-interrupt, which in non-stop mode
// sends that thread a SIGSTOP. (In all-stop mode gdb would interrupt by
// sending SIGINT to the process group, which for PostgreSQL means "cancel
// the query".) PostgreSQL's signals pass straight through to the backend.
func attach(ctx context.Context, pid int) (*session, error) {
	cmd := exec.Command("gdb", "-q", "-nx", "--interpreter=mi2")
	cmd.Env = append(os.Environ(), "DEBUGINFOD_URLS=", "LC_ALL=C")
	s := &session{cmd: cmd, exited: make(chan struct{}), pending: map[int]chan string{}, changed: make(chan struct{})}
	cmd.Stderr = &s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start gdb: %w", err)
	}
	go s.read(stdout)

	for _, c := range []struct {
		cmd      string
		optional bool // older gdbs lack it
	}{
		{"-gdb-set confirm off", false},
		{"-gdb-set pagination off", false},
		{"-gdb-set debuginfod enabled off", true},
		{"-gdb-set mi-async on", false},
		{"-gdb-set non-stop on", false},
		// Only the postgres binary's own symbols matter; reading the
		// shared libraries' (libc's debug info, when installed) would
		// take most of the attach's time.
		{"-gdb-set auto-solib-add off", false},
		// PostgreSQL's own signals: reload, cancel, die, quickdie,
		// timeouts, latches and procsignals, children.
		{"handle SIGHUP SIGINT SIGQUIT SIGTERM SIGALRM SIGPIPE SIGUSR1 SIGUSR2 SIGCHLD SIGURG SIGIO SIGWINCH nostop noprint pass", false},
	} {
		if _, err := s.command(ctx, c.cmd); err != nil && !c.optional {
			s.kill()
			return nil, fmt.Errorf("gdb %s: %w", c.cmd, err)
		}
	}
	if _, err := s.command(ctx, "-target-attach "+strconv.Itoa(pid)); err != nil {
		s.kill()
		return nil, fmt.Errorf("attach gdb: %w", err)
	}
	// The attach completes asynchronously, with a *stopped record.
	if err := s.waitFor(ctx, func() bool { return len(s.stops) > 0 }); err != nil {
		_ = s.release(-1)
		return nil, fmt.Errorf("attach gdb: %w", err)
	}
	return s, nil
}

// read parses gdb's output until it ends, then waits for gdb to exit.
func (s *session) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		rec := strings.TrimLeft(line, "0123456789")
		s.mu.Lock()
		if !strings.HasPrefix(line, "=library-loaded") && !strings.HasPrefix(line, "(gdb)") {
			s.tail = append(s.tail, line)
			if len(s.tail) > 30 {
				s.tail = s.tail[1:]
			}
		}
		switch {
		case strings.HasPrefix(rec, "^"):
			if tok, err := strconv.Atoi(line[:len(line)-len(rec)]); err == nil {
				if ch, ok := s.pending[tok]; ok {
					delete(s.pending, tok)
					ch <- rec[1:]
				}
			}
		case strings.HasPrefix(rec, "*stopped"):
			s.stops = append(s.stops, rec)
			s.running = false
			s.broadcast()
		case strings.HasPrefix(rec, "*running"):
			s.running = true
			s.runs++
			s.broadcast()
		}
		s.mu.Unlock()
	}
	// Drain the pipe should the scanner have given up on a huge line, so
	// that gdb never blocks writing.
	_, _ = io.Copy(io.Discard, r)
	err := s.cmd.Wait()
	s.mu.Lock()
	s.waitErr = err
	for tok, ch := range s.pending {
		delete(s.pending, tok)
		close(ch)
	}
	s.mu.Unlock()
	close(s.exited)
}

// broadcast wakes everyone waiting on s.changed. s.mu must be held.
func (s *session) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// command sends an MI or CLI command and returns its result record's
// text after "^done" or "^running" ("" or ",field=..."), or an error for
// "^error".
func (s *session) command(ctx context.Context, c string) (string, error) {
	ch := make(chan string, 1)
	s.mu.Lock()
	s.token++
	tok := s.token
	s.pending[tok] = ch
	s.mu.Unlock()

	s.wmu.Lock()
	_, err := fmt.Fprintf(s.stdin, "%d%s\n", tok, c)
	s.wmu.Unlock()
	if err != nil {
		return "", fmt.Errorf("write to gdb: %w", err)
	}
	select {
	case res, ok := <-ch:
		switch {
		case !ok:
			return "", fmt.Errorf("gdb exited%s", s.transcript())
		case strings.HasPrefix(res, "error"):
			msg := field(res, "msg")
			if msg == "" {
				msg = res
			}
			return "", fmt.Errorf("%s: %s", c, msg)
		}
		for _, class := range []string{"done", "running", "connected", "exit"} {
			if rest, ok := strings.CutPrefix(res, class); ok {
				return rest, nil
			}
		}
		return res, nil
	case <-ctx.Done():
		return "", fmt.Errorf("%s: %w%s", c, ctx.Err(), s.transcript())
	}
}

// waitFor waits until cond, called with s.mu held, is true.
func (s *session) waitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ok, changed := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-s.exited:
			return fmt.Errorf("gdb exited%s", s.transcript())
		case <-ctx.Done():
			return fmt.Errorf("%w%s", ctx.Err(), s.transcript())
		}
	}
}

// release deletes breakpoint bp (none when -1), detaches from the process
// and ends gdb. When that fails it closes gdb's standard input, on which
// gdb quits and detaches, and at last kills gdb, which also detaches it
// (though a breakpoint still inserted would then stay).
func (s *session) release(bp int) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	select {
	case <-s.exited:
		return nil // nothing left to detach
	default:
	}
	err := func() error {
		s.mu.Lock()
		running := s.running
		s.mu.Unlock()
		if running {
			// Stop the thread first, so that gdb removes the breakpoint
			// from a stopped process. Should the breakpoint be hit
			// meanwhile, that stop serves as well.
			if _, err := s.command(ctx, "-exec-interrupt --all"); err != nil {
				return err
			}
			if err := s.waitFor(ctx, func() bool { return !s.running }); err != nil {
				return fmt.Errorf("interrupt: %w", err)
			}
		}
		if bp >= 0 {
			if _, err := s.command(ctx, "-break-delete "+strconv.Itoa(bp)); err != nil {
				return err
			}
		}
		if _, err := s.command(ctx, "-target-detach"); err != nil {
			return err
		}
		_, err := s.command(ctx, "-gdb-exit")
		return err
	}()
	_ = s.stdin.Close()
	select {
	case <-s.exited:
	case <-ctx.Done():
		s.kill()
		if err == nil {
			err = errors.New("gdb did not exit; killed it")
		}
	}
	return err
}

// kill ends gdb at once and waits for it.
func (s *session) kill() {
	_ = s.stdin.Close()
	_ = s.cmd.Process.Signal(syscall.SIGTERM) // gdb detaches on SIGTERM
	select {
	case <-s.exited:
		return
	case <-time.After(releaseTimeout):
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// transcript returns the end of gdb's output, for an error message.
func (s *session) transcript() string {
	s.mu.Lock()
	lines := strings.Join(s.tail, "\n")
	s.mu.Unlock()
	if e := s.stderr.String(); e != "" {
		lines += "\nstderr:\n" + e
	}
	if lines == "" {
		return ""
	}
	return "; gdb's output ends:\n" + lines
}

// field returns the value of the first name="..." in an MI record, or "".
// In MI values a double quote is always escaped, so `name="` cannot occur
// inside another value.
func field(rec, name string) string {
	i := strings.Index(rec, name+`="`)
	for i > 0 && rec[i-1] != ',' && rec[i-1] != '{' {
		j := strings.Index(rec[i+1:], name+`="`)
		if j < 0 {
			return ""
		}
		i += 1 + j
	}
	if i < 0 {
		return ""
	}
	rest := rec[i+len(name)+1:]
	end := 1
	for end < len(rest) && rest[end] != '"' {
		if rest[end] == '\\' {
			end++
		}
		end++
	}
	if end >= len(rest) {
		return ""
	}
	v, err := strconv.Unquote(rest[:end+1])
	if err != nil {
		return rest[1:end]
	}
	return v
}

// tailWriter keeps the last few KiB written to it.
type tailWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *tailWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if over := w.buf.Len() - 4096; over > 0 {
		w.buf.Next(over)
	}
	return len(b), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// Package pgcluster starts a throwaway PostgreSQL cluster from the local server binaries.
//
// It serves the tests, which need a real server but must not depend on one
// being set up, and sfgen's commands when no DSN is given. [Start] runs
// initdb into a fresh directory under /tmp, starts postgres directly as a
// child process and waits until it accepts connections; [Cluster.Stop] shuts
// it down and removes every file it made.
//
// # Finding the server
//
// Start looks for a directory holding both initdb and postgres, in order:
// the [WithBinDir] option; $SFGEN_PG_BIN; `pg_config --bindir` when
// pg_config is on PATH; the highest-numbered /usr/lib/postgresql/*/bin
// (Debian's layout); the directory of the initdb found on PATH, symlinks
// resolved; last, the pinned server package that package pgfetch fetched
// into its cache earlier (sfgen verify --fetch-postgres, or the tests on a
// machine with no server). Start itself never fetches. When none has them
// it returns an error wrapping [ErrNoServer] that names every place it
// looked.
//
// # Layout and connecting
//
// Each cluster lives in one directory made by os.MkdirTemp("/tmp", "sfpg"),
// kept short because a unix socket path must fit in about 100 bytes:
//
//	/tmp/sfpgNNNN/sfpgcluster         marker: owner pid (see below)
//	/tmp/sfpgNNNN/.s.PGSQL.5432       the socket
//	/tmp/sfpgNNNN/data/               the data directory
//	/tmp/sfpgNNNN/data/postgres.log   the server's log (stderr)
//
// The server listens on that unix socket only (listen_addresses is empty),
// so clusters never compete for TCP ports and nothing is reachable over the
// network. Authentication is trust for the superuser postgres; the
// directory is mode 0700, so only its owner (and root) can reach the socket.
// [Cluster.DSN] returns a URL of the form
//
//	postgres://postgres@/postgres?host=/tmp/sfpgNNNN&port=5432&sslmode=disable
//
// which pgx, goose, psql and pgbench all accept. The port is spelled out so
// that a PGPORT in the environment cannot redirect libpq to another socket
// name.
//
// The server runs with fsync=off and full_page_writes=off: a crash loses
// the cluster, which is thrown away anyway. synchronous_commit is left at
// its default so that benchmarks against it stay honest. $SFGEN_PG_SETTINGS
// adds settings of the caller's ("max_connections=500 shared_buffers=256MB"),
// after these and before [WithSetting]'s.
//
// # Running as root
//
// initdb and postgres refuse to run as root. When the effective user is
// root, Start gives the directory to the OS user postgres and runs both
// programs as that user (syscall.Credential); it fails if there is no such
// user. Otherwise they run as the current user.
//
// # Teardown
//
// Stop sends SIGINT (fast shutdown), waits up to 10 seconds, then sends
// SIGKILL; then it removes the directory. It may be called more than once.
//
// On Linux, postgres is started with Pdeathsig set to SIGKILL, so the kernel
// kills it when the process that called Start dies, however it dies: a panic,
// os.Exit, a test timeout or SIGKILL. (Strictly, the signal follows the OS
// thread that forked postgres; the Go runtime does not end its threads
// except for goroutines that exit while locked with runtime.LockOSThread,
// so do not call Start from such a goroutine.) Postgres' own helper
// processes notice the postmaster's death and exit by themselves. On other
// systems there is no such guarantee. postgres also runs in its own process
// group, so a Ctrl-C at the terminal reaches only our process, which then
// takes postgres down through Pdeathsig or Stop.
//
// A process killed that way cannot remove its directory. Start therefore
// sweeps /tmp (and os.TempDir) for leftovers: a sfpg* directory is removed
// only if it holds the marker file, the process named in the marker is gone
// (pid and start time checked, so a reused pid does not count), and the
// postmaster named in data/postmaster.pid is not running. Anything else is
// left alone.
//
// # Tests
//
// Tests do not use this package directly but its subpackage pgtest, whose
// DSN(t) returns $DATABASE_URL unchanged when it is set and otherwise a
// fresh database on one cluster shared by the test binary. The helpers live
// in a subpackage so that the sfgen binary, which imports pgcluster, does
// not link the testing package.
package pgcluster

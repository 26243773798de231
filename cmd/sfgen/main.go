// Command sfgen composes and decodes Snowflake IDs, generates the PL/pgSQL
// that composes the same IDs inside PostgreSQL, installs it with goose, and
// verifies that the database and Go agree.
//
// Run "sfgen --help" for the commands and "sfgen COMMAND --help" for each
// command's flags and examples.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses.
const (
	exitOK    = 0 // success
	exitFail  = 1 // a check failed, or the database could not be reached
	exitUsage = 2 // bad flags, arguments or values
)

// A command is one subcommand of sfgen.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order the help shows them.
var commands []command

func init() {
	commands = []command{
		{"verify", "check that PostgreSQL and Go agree on every input (start here)", runVerify},
		{"compose", "build one ID from a timestamp, datacenter, machine and sequence", runCompose},
		{"decompose", "split an ID into its fields, its time and its bits", runDecompose},
		{"next", "generate IDs for one node, one a line", runNext},
		{"sql", "print the SQL install script", runSQL},
		{"migration", "write the functions as a goose migration into your migrations directory", runMigration},
		{"install", "apply the migrations to a database with goose", runInstall},
		{"build-native", "build the native (C) generator on a database server, for install or a migration", runBuildNative},
		{"node", "show or set the node that snowflake_next_id() uses", runNode},
		{"audit", "check the IDs stored in a table: nodes, future and invalid IDs, skew", runAudit},
		{"convert", "move a table's integer key (serial, identity or plain) to snowflake_next_id()", runConvert},
		{"resume", "make the generator safe to take over a node's writes (after a switchover)", runResume},
		{"serve", "serve a web page and an HTTP API that compose and decode IDs", runServe},
		{"bench", "measure snowflake_next_id() against bigserial on a database", runBench},
		{"version", "print sfgen's version and the SQL release it installs", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is sfgen with its arguments (without the program name) and its
// output streams: data goes to stdout, diagnostics to stderr. It returns
// the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && args[0] == "help" {
			return run(ctx, []string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return exitOK
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "sfgen: unknown command %q; run 'sfgen --help' for the list\n", args[0])
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, `sfgen: Snowflake IDs for Go and PostgreSQL, bit-identical on both sides

Usage:
  sfgen COMMAND [flags]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Examples:
  sfgen compose --timestamp 1288834975657 --datacenter 1 --machine 1
  sfgen decompose 4194439168 --json

Run 'sfgen COMMAND --help' for a command's flags and examples.
`)
}

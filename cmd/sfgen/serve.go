package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/sfgen/sfgen/internal/serve"
)

const serveHelp = `
sfgen serve [--addr HOST:PORT] [--layout NAME|SPEC]

Serves a web page that composes an ID from a timestamp (blank means now,
Unix milliseconds or an RFC 3339 time), a datacenter, a machine and a
sequence, and decodes an ID into them, with its 64 bits drawn segment by
segment; and an API that answers as 'sfgen compose --json' and
'sfgen decompose --json' print:

  GET /api/compose?timestamp=MS&datacenter=N&machine=N&sequence=N
  GET /api/decompose?id=ID

Bad input gets status 400 and {"error": MESSAGE, "field": NAME}, with the
command line's message. Everything is embedded in sfgen; nothing is
fetched at run time. It listens on loopback unless --addr names another
address, prints the page's URL on stdout once it listens (with port 0, the
port chosen), logs one line a request on stderr, and stops gracefully on
SIGINT or SIGTERM (Ctrl-C).

Examples:
  sfgen serve
  sfgen serve --addr 127.0.0.1:0
  sfgen serve --layout discord --addr localhost:9000
  sfgen serve --addr 0.0.0.0:8080      # every interface: anyone who can reach this machine
  curl 'http://127.0.0.1:8080/api/decompose?id=4194439168'
`

// defaultAddr is --addr's default: loopback only.
const defaultAddr = "127.0.0.1:8080"

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("serve", serveHelp, stdout, stderr)
	lf, code, done := c.layoutVar(args)
	if done {
		return code
	}
	addr := c.fs.String("addr", defaultAddr, "listen on `HOST:PORT`; port 0 picks a free one")
	if code, done := c.parseFlags(args); done {
		return code
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return c.usageError("addr %q is not HOST:PORT: %v; want an address such as %s", *addr, err, defaultAddr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return c.usageError("addr %q: port %q is not a number from 0 to 65535", *addr, port)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return c.fail("%v", err)
	}
	if !serve.IsLoopback(host) {
		fmt.Fprintf(stderr, "sfgen serve: listening on %s, not only loopback: anyone who can reach it can use the page\n", ln.Addr())
	}
	fmt.Fprintf(stderr, "sfgen serve: layout %s; Ctrl-C stops\n", describeLayout(lf.layout))
	fmt.Fprintln(stdout, serve.URL(ln.Addr()))
	h := serve.Handler(serve.Options{Layout: lf.layout})
	if err := serve.Serve(ctx, ln, h, stderr); err != nil {
		return c.fail("%v", err)
	}
	fmt.Fprintln(stderr, "sfgen serve: stopped")
	return exitOK
}

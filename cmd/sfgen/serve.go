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
sfgen serve [--addr HOST:PORT] [--allow-host NAME ...] [--layout NAME|SPEC]

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

It answers only requests whose Host names it: its own address (the IP it
listens on, or the name --addr gave), or a loopback name (localhost,
127.0.0.1, [::1]), with any port. Listening on every interface
(0.0.0.0 or ::), its own addresses are those of the machine's interfaces,
read as each request arrives; a DNS name of the machine is not one of
them. So a page on another site cannot reach it through DNS rebinding.
Behind a proxy, or for a name of this machine, --allow-host NAME (again
for each name) answers NAME too, in any case: NAME with any port, or
NAME:PORT with that port only. Any other Host gets 421 Misdirected
Request, with a line that says how to allow it.

Examples:
  sfgen serve
  sfgen serve --addr 127.0.0.1:0
  sfgen serve --layout discord --addr localhost:9000
  sfgen serve --addr 0.0.0.0:8080      # every interface: anyone who can reach this machine
  sfgen serve --allow-host sfgen.example.com   # behind a proxy that sends Host: sfgen.example.com
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
	var allow stringsFlag
	c.fs.Var(&allow, "allow-host", "also answer requests whose Host is `NAME` (NAME:PORT: with that port only); give it again for each name")
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
	for _, a := range allow {
		if _, _, err := serve.ParseAllowHost(a); err != nil {
			return c.usageError("%v", err)
		}
	}
	// A name --addr gave (not an IP) is the server's own too.
	if net.ParseIP(host) == nil && host != "" {
		if _, _, err := serve.ParseAllowHost(host); err == nil {
			allow = append(allow, host)
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return c.fail("%v", err)
	}
	if !serve.IsLoopback(host) {
		fmt.Fprintf(stderr, "sfgen serve: listening on %s, not only loopback: anyone who can reach it can use the page\n", listening(host, ln.Addr()))
	}
	fmt.Fprintf(stderr, "sfgen serve: layout %s; Ctrl-C stops\n", describeLayout(lf.layout))
	fmt.Fprintln(stdout, serve.URL(ln.Addr()))
	h := serve.Handler(serve.Options{Layout: lf.layout})
	if err := serve.Serve(ctx, ln, h, stderr, allow...); err != nil {
		return c.fail("%v", err)
	}
	fmt.Fprintln(stderr, "sfgen serve: stopped")
	return exitOK
}

// listening says where a listener on --addr's host listens, at the port
// it got: the host as given ("0.0.0.0:8080", where Go's listener says
// "[::]:8080", as it also takes IPv6), with "every address of this
// machine" for a host that is empty or unspecified (0.0.0.0, ::).
func listening(host string, addr net.Addr) string {
	_, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	shown := net.JoinHostPort(host, port)
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		shown += " (every address of this machine)"
	}
	return shown
}

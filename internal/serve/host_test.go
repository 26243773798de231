package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestHostsAllow: a server on 127.0.0.1:8080 and one on 192.0.2.7:8080,
// with --allow-host sfgen.example.com and proxy.example:8443, answer their
// own address, the loopback names and the allowed names (in any case, a
// NAME with any port, a NAME:PORT with that port), and refuse every other
// Host, a name that only ends or begins with an allowed one included.
func TestHostsAllow(t *testing.T) {
	allow := []string{"sfgen.example.com", "Proxy.Example:8443"}
	for _, listen := range []string{"127.0.0.1:8080", "192.0.2.7:8080"} {
		addr, err := net.ResolveTCPAddr("tcp", listen)
		if err != nil {
			t.Fatal(err)
		}
		h, err := NewHosts(addr, allow)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			host string
			ok   bool
		}{
			{listen, true}, // its own address
			{strings.TrimSuffix(listen, ":8080"), true},
			{"localhost", true},
			{"localhost:8080", true},
			{"LOCALHOST:9000", true},
			{"127.0.0.1:8080", true},
			{"127.0.0.1", true},
			{"[::1]:8080", true},
			{"[::1]", true},
			{"sfgen.example.com", true}, // --allow-host without a port: any port
			{"sfgen.example.com:443", true},
			{"SFGEN.Example.COM", true},
			{"proxy.example:8443", true}, // --allow-host NAME:PORT
			{"PROXY.EXAMPLE:8443", true},

			{"evil.example", false},
			{"evil.example:8080", false},
			{"", false},
			{"evil-localhost", false},
			{"localhost.evil.example", false},
			{"evil.localhost", false},
			{"sfgen.example.com.evil.example", false},
			{"evilsfgen.example.com", false},
			{"sfgen.example.co", false},
			{"proxy.example", false}, // NAME:PORT allows that port only
			{"proxy.example:8080", false},
			{"192.0.2.8:8080", false}, // another address
			{"0.0.0.0:8080", false},
			{"[::]:8080", false},
			{"::1", false}, // IPv6 without brackets
			{"[127.0.0.1]", false},
			{"localhost:", false},
			{"localhost:0", false},
			{"localhost:99999", false},
			{"localhost:80x", false},
			{"local host", false},
		} {
			if got := h.Allows(c.host); got != c.ok {
				t.Errorf("listening on %s: Allows(%q) = %v, want %v", listen, c.host, got, c.ok)
			}
		}
		// The other server's own address is not this one's.
		if listen == "127.0.0.1:8080" && h.Allows("192.0.2.7:8080") {
			t.Errorf("listening on %s: 192.0.2.7:8080 allowed", listen)
		}
	}
}

// TestHostsWildcard: on 0.0.0.0 (::) the own addresses are the
// interfaces' (as they are at each request); a DNS name is not one.
func TestHostsWildcard(t *testing.T) {
	h, err := NewHosts(&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ifaces := []net.Addr{&net.IPNet{IP: net.ParseIP("192.0.2.7"), Mask: net.CIDRMask(24, 32)},
		&net.IPNet{IP: net.ParseIP("2001:db8::7"), Mask: net.CIDRMask(64, 128)}}
	h.ifaces = func() ([]net.Addr, error) { return ifaces, nil }
	for _, c := range []struct {
		host string
		ok   bool
	}{
		{"192.0.2.7:8080", true}, {"192.0.2.7", true}, {"[2001:db8::7]:8080", true}, {"localhost:8080", true}, {"127.0.0.1:8080", true},
		{"192.0.2.8:8080", false}, {"0.0.0.0:8080", false}, {"[::]:8080", false}, {"myhost.example:8080", false}, {"evil.example", false}, {"", false},
	} {
		if got := h.Allows(c.host); got != c.ok {
			t.Errorf("on a wildcard address: Allows(%q) = %v, want %v", c.host, got, c.ok)
		}
	}
	// An address the machine gets later is its own from then on.
	ifaces = append(ifaces, &net.IPNet{IP: net.ParseIP("192.0.2.8"), Mask: net.CIDRMask(24, 32)})
	if !h.Allows("192.0.2.8:8080") {
		t.Error("an interface's new address is refused")
	}
	// The machine's real addresses are its own.
	h.ifaces = net.InterfaceAddrs
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() {
			if host := net.JoinHostPort(n.IP.String(), "8080"); !h.Allows(host) {
				t.Errorf("on a wildcard address: the interface address %s is refused", host)
			}
		}
	}
}

// TestServeRefusesOtherHosts: through Serve, a request whose Host is not
// the server's gets 421 and a line that names the Host and --allow-host;
// the allowed ones get the page.
func TestServeRefusesOtherHosts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logw syncBuffer
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		done <- Serve(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page") }), &logw, "sfgen.example.com")
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	u := URL(ln.Addr())
	for _, c := range []struct {
		host   string
		status int
		body   string
	}{
		{ln.Addr().String(), 200, "page"},
		{"sfgen.example.com:443", 200, "page"},
		{"evil.example:80", 421, `sfgen serve refused Host "evil.example:80": it answers only its own address (` + ln.Addr().String() +
			`), the loopback names (localhost, 127.0.0.1, [::1]), sfgen.example.com; if that name is meant to reach it (through a proxy, say), start it with --allow-host evil.example` + "\n"},
	} {
		req, _ := http.NewRequest("GET", u, nil)
		req.Host = c.host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != c.status || string(b) != c.body {
			t.Errorf("Host %s: %d %q; want %d %q", c.host, res.StatusCode, b, c.status, c.body)
		}
		if c.status == 421 && (res.Header.Get("Content-Type") != "text/plain; charset=utf-8" || res.Header.Get("X-Content-Type-Options") != "nosniff") {
			t.Errorf("Host %s: headers %v; want plain text, nosniff", c.host, res.Header)
		}
	}
	if err := Serve(ctx, ln, http.NotFoundHandler(), io.Discard, "evil..example"); err == nil || !strings.Contains(err.Error(), `--allow-host "evil..example": an empty label`) {
		t.Errorf("Serve with a malformed name: %v", err)
	}
}

func TestParseAllowHost(t *testing.T) {
	for _, c := range []struct{ name, host, port, err string }{
		{"sfgen.example.com", "sfgen.example.com", "", ""},
		{"SFGEN.example.com:8443", "sfgen.example.com", "8443", ""},
		{"my_host", "my_host", "", ""},
		{"192.0.2.7", "192.0.2.7", "", ""},
		{"[2001:DB8::1]:80", "2001:db8::1", "80", ""},
		{"", "", "", "empty"},
		{"http://sfgen.example.com", "", "", "a URL or a path"},
		{"sfgen.example.com/", "", "", "a URL or a path"},
		{"*.example.com", "", "", "a pattern"},
		{"a..b", "", "", "an empty label"},
		{"example.com.", "", "", "an empty label"},
		{"2001:db8::1", "", "", "an IPv6 address without brackets"},
		{"[example.com]", "", "", "not an IPv6 address in brackets"},
		{"x:0", "", "", `port "0" is not a number from 1 to 65535`},
		{"x:65536", "", "", `port "65536"`},
		{"x:", "", "", "an empty port"},
		{":80", "", "", "no host before the port"},
		{"a b", "", "", `the character ' '`},
		{strings.Repeat("a", 64) + ".example", "", "", "a label of 64 bytes"},
	} {
		host, port, err := ParseAllowHost(c.name)
		if c.err == "" && (err != nil || host != c.host || port != c.port) || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("ParseAllowHost(%q) = %q, %q, %v; want %q, %q, error with %q", c.name, host, port, err, c.host, c.port, c.err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "--allow-host ") {
			t.Errorf("ParseAllowHost(%q): %v; want an error that names the flag", c.name, err)
		}
	}
}

func TestURLOfWildcard(t *testing.T) {
	if got := URL(&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}); got != "http://127.0.0.1:8080/" {
		t.Errorf("URL of [::]:8080 = %s", got)
	}
}

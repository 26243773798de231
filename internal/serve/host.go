package serve

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// Hosts decides which requests a server answers by their Host, so that a
// page on another site cannot reach it through DNS rebinding (its
// requests carry that site's name). It allows:
//
//   - the loopback names: localhost and the loopback addresses
//     (127.0.0.0/8, [::1]);
//   - the address the server listens on, as an IP literal; on a wildcard
//     address (0.0.0.0, ::) every address of the machine's interfaces,
//     as they are when the request arrives;
//   - the names given to NewHosts (--allow-host), case-insensitively: a
//     NAME with any port or none, a NAME:PORT with that port only.
//
// The port of a loopback name or an address is not checked (an IP literal
// is not a name a rebinding can point elsewhere, and a forwarded port,
// ssh -L 9000:localhost:8080 say, changes it). Every other Host, an empty
// one included, gets 421 Misdirected Request.
type Hosts struct {
	listen   net.IP // nil on a wildcard address
	port     string
	names    []hostPort
	ifaces   func() ([]net.Addr, error) // the machine's addresses: net.InterfaceAddrs
	describe string                     // what is allowed, for the 421's message
}

type hostPort struct{ host, port string }

// NewHosts returns the Hosts of a server listening on addr, a TCP
// listener's address, with the extra names allow (each as ParseAllowHost
// reads it).
func NewHosts(addr net.Addr, allow []string) (*Hosts, error) {
	h := &Hosts{ifaces: net.InterfaceAddrs}
	if ta, ok := addr.(*net.TCPAddr); ok {
		h.port = strconv.Itoa(ta.Port)
		if !ta.IP.IsUnspecified() {
			h.listen = ta.IP
		}
	}
	for _, a := range allow {
		host, port, err := ParseAllowHost(a)
		if err != nil {
			return nil, err
		}
		h.names = append(h.names, hostPort{host, port})
	}
	var d strings.Builder
	if h.listen != nil {
		fmt.Fprintf(&d, "its own address (%s)", net.JoinHostPort(h.listen.String(), h.port))
	} else {
		fmt.Fprintf(&d, "the machine's own IP addresses (port %s)", h.port)
	}
	d.WriteString(", the loopback names (localhost, 127.0.0.1, [::1])")
	for _, n := range h.names {
		d.WriteString(", " + joinHost(n.host, n.port))
	}
	h.describe = d.String()
	return h, nil
}

func joinHost(host, port string) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" {
		return host
	}
	return host + ":" + port
}

// Allows reports whether a request whose Host is hostport is answered.
func (h *Hosts) Allows(hostport string) bool {
	host, port, ip, err := splitHost(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" || ip != nil && ip.IsLoopback() {
		return true
	}
	if ip != nil {
		if h.listen != nil {
			return ip.Equal(h.listen)
		}
		if ip.IsUnspecified() {
			return false
		}
		addrs, err := h.ifaces()
		if err != nil {
			return false
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
	}
	for _, n := range h.names {
		if n.host == host && (n.port == "" || n.port == port) {
			return true
		}
	}
	return false
}

// Handler wraps next so that a request whose Host h does not allow gets
// 421 Misdirected Request and a line of plain text that says which Host
// was refused and how to allow it.
func (h *Hosts) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.Allows(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		hdr := w.Header()
		hdr.Set("Content-Type", "text/plain; charset=utf-8")
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusMisdirectedRequest)
		fmt.Fprintln(w, h.refusal(r.Host))
	})
}

// refusal is the 421's message for a request whose Host is hostport.
func (h *Hosts) refusal(hostport string) string {
	what := "an empty Host"
	if hostport != "" {
		what = "Host " + quoteCut(hostport)
	}
	how := "--allow-host NAME"
	if host, _, _, err := splitHost(hostport); err == nil && validName(host) == nil {
		how = "--allow-host " + host
	}
	return fmt.Sprintf("sfgen serve refused %s: it answers only %s; if that name is meant to reach it (through a proxy, say), start it with %s", what, h.describe, how)
}

// quoteCut quotes s, or its first 64 bytes and "…" when it is longer.
func quoteCut(s string) string {
	if len(s) <= 64 {
		return strconv.Quote(s)
	}
	return strconv.Quote(strings.ToValidUTF8(s[:64], "")) + "…"
}

// splitHost splits a Host, lower-cased, into its host and port ("" when
// it has none), and ip, the host's address when it is an IP literal (an
// IPv6 one in brackets, as a Host writes it).
func splitHost(hostport string) (host, port string, ip net.IP, err error) {
	s := strings.ToLower(hostport)
	if s == "" {
		return "", "", nil, errors.New("empty")
	}
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", nil, errors.New("no ] after an IPv6 address")
		}
		host, port = s[1:end], s[end+1:]
		if ip = net.ParseIP(host); ip == nil || !strings.Contains(host, ":") {
			return "", "", nil, errors.New("not an IPv6 address in brackets")
		}
		if port != "" && port[0] != ':' {
			return "", "", nil, errors.New("text after the ]")
		}
		port = strings.TrimPrefix(port, ":")
		if port == "" && strings.HasSuffix(s, ":") {
			return "", "", nil, errors.New("an empty port")
		}
	} else {
		switch strings.Count(s, ":") {
		case 0:
			host = s
		case 1:
			i := strings.IndexByte(s, ':')
			host, port = s[:i], s[i+1:]
			if port == "" {
				return "", "", nil, errors.New("an empty port")
			}
		default:
			return "", "", nil, errors.New("an IPv6 address without brackets")
		}
		if host == "" {
			return "", "", nil, errors.New("no host before the port")
		}
		ip = net.ParseIP(host) // IPv4 only: the host has no colon
	}
	if port != "" {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 || strings.TrimLeft(port, "0123456789") != "" {
			return "", "", nil, fmt.Errorf("port %q is not a number from 1 to 65535", port)
		}
	}
	if ip == nil {
		if err := validName(host); err != nil {
			return "", "", nil, err
		}
	}
	return host, port, ip, nil
}

// validName checks a DNS name: dot-separated labels of 1 to 63 letters,
// digits, hyphens and underscores, 253 bytes at most.
func validName(host string) error {
	if len(host) > 253 {
		return fmt.Errorf("%d bytes, longer than a DNS name's 253", len(host))
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" {
			return errors.New("an empty label (two dots, or a dot at an end)")
		}
		if len(label) > 63 {
			return fmt.Errorf("a label of %d bytes, longer than 63", len(label))
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("the character %q, which a host name does not have", c)
			}
		}
	}
	return nil
}

// ParseAllowHost reads an --allow-host NAME: a host name, an IPv4
// address or an IPv6 address in brackets, with or without :PORT. It
// returns the host, lower-cased, and the port ("" for any).
func ParseAllowHost(name string) (host, port string, err error) {
	switch {
	case name == "":
		err = errors.New("empty")
	case strings.Contains(name, "/"):
		err = errors.New("a URL or a path, not a host")
	case strings.ContainsAny(name, "*?"):
		err = errors.New("a pattern; give each name on its own --allow-host")
	default:
		host, port, _, err = splitHost(name)
	}
	if err != nil {
		return "", "", fmt.Errorf("--allow-host %s: %v; want a host name, an IPv4 address or an IPv6 address in brackets, with or without :PORT, such as sfgen.example.com, sfgen.example.com:8443 or [2001:db8::1]", quoteCut(name), err)
	}
	return host, port, nil
}

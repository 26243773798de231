package connect

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// parseError turns pgx's error for dsn into a *ParseError. pgx's own text
// quotes dsn, masking the password only where it can recognise one, and
// its details quote parts of dsn too (a keyword, a port, a query
// parameter, any of which can be a misplaced password). So the reason is
// chosen from the fixed phrases below by what pgx's text starts with, and
// nothing of pgx's text is kept.
func parseError(dsn string, err error) *ParseError {
	form := "keyword/value"
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		form = "URL"
	} else if scheme, _, ok := strings.Cut(dsn, "://"); ok && scheme != "" && !strings.ContainsAny(scheme, " =") {
		// Another database's URL: say so, rather than what is wrong
		// with it as keyword=value pairs. (The scheme is letters before
		// "://", never a password.)
		return &ParseError{Form: "URL", Reason: "the scheme " + schemeName(scheme) + " is not PostgreSQL's: want postgres:// or postgresql://, or keyword=value pairs"}
	}
	return &ParseError{Form: form, Reason: reason(err)}
}

// schemeName is scheme, or "given" when it is not a plain word, which a
// message may quote.
func schemeName(scheme string) string {
	for _, r := range scheme {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return "given"
		}
	}
	return scheme + "://"
}

// malformed is the reason when pgx's text matches none of the phrases.
const malformed = "malformed"

// syntax maps the start of pgx's reason for a string it could not split
// into settings to what sfgen says. pgx words these as "failed to parse
// as URL (DETAIL)" or "failed to parse as keyword/value (DETAIL)".
var syntax = []struct{ pgx, say string }{
	{"forbidden NUL byte", "it contains a NUL byte"},
	{"invalid keyword/value", "want keyword=value pairs separated by spaces"},
	{"unterminated quoted string", "a quoted value has no closing quote"},
	{`missing "=" after`, `a keyword is not followed by "="`},
	{`missing key/value separator "="`, `a query parameter has no "="`},
	{`extra key/value separator "="`, `a query parameter has more than one "="`},
	{"end of string reached when looking for matching", `an IPv6 host has no closing "]"`},
	{"IPv6 host address may not be empty", "an IPv6 host is empty"},
	{"unexpected character", `an IPv6 host is followed by something other than ":" or "/"`},
	{"invalid percent-encoded token", "a percent-escape is not % and two hex digits"},
	{"forbidden value %00", "a percent-escape is %00"},
	{"unexpected spaces found", "a part has spaces inside it; write them as %20"},
}

// settings are the reasons pgx gives for a setting it could not use, as
// sfgen says them: pgx's own words, without the value it quotes after
// them.
var settings = []string{
	"invalid port",
	"invalid connect_timeout",
	"invalid sslcertmode",
	"failed to configure TLS",
	"failed to read service",
	"could not match", // port numbers to hosts
	"unknown target_session_attrs value",
	"min_protocol_version cannot be greater than max_protocol_version",
	"invalid min_protocol_version",
	"invalid max_protocol_version",
	"unknown channel_binding value",
	"invalid require_auth",
	"cannot parse statement_cache_capacity",
	"cannot parse description_cache_capacity",
	"invalid default_query_exec_mode",
	"cannot parse pool_max_conns",
	"pool_max_conns too small",
	"cannot parse pool_min_conns",
	"cannot parse pool_min_idle_conns",
	"cannot parse pool_max_conn_lifetime_jitter",
	"cannot parse pool_max_conn_lifetime",
	"cannot parse pool_max_conn_idle_time",
	"cannot parse pool_health_check_period",
	"cannot parse pool_ping_timeout",
}

// reason returns the fixed phrase for pgx's parse error err.
func reason(err error) string {
	var pce *pgconn.ParseConfigError
	if !errors.As(err, &pce) {
		return malformed
	}
	// pgx's text is "cannot parse `DSN`: REASON" or "... REASON (DETAIL)";
	// a copy without the string leaves only REASON and DETAIL to match.
	bare := *pce
	bare.ConnString = ""
	text, ok := strings.CutPrefix(bare.Error(), "cannot parse ``: ")
	if !ok {
		return malformed
	}
	for _, prefix := range []string{"failed to parse as URL (", "failed to parse as keyword/value ("} {
		if detail, ok := strings.CutPrefix(text, prefix); ok {
			for _, s := range syntax {
				if strings.HasPrefix(detail, s.pgx) {
					return s.say
				}
			}
			return malformed
		}
	}
	for _, s := range settings {
		if strings.HasPrefix(text, s) {
			if s == "could not match" {
				return "the number of ports does not match the number of hosts"
			}
			return s
		}
	}
	return malformed
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/sfgen/sfgen/internal/sqlgen"
)

const versionHelp = `
sfgen version [--json]

Prints this sfgen's version, the release of the SQL it installs (the
release 'sfgen verify' expects a database to be at), and the Go version it
was built with. The version is the module version for 'go install ...@vX',
"(devel)" for a build from a checkout, with the commit when Go recorded one.

Examples:
  sfgen version
  sfgen version --json
`

// buildInfo is what version prints.
type buildInfo struct {
	Version    string `json:"version"`
	Revision   string `json:"revision,omitempty"` // the VCS commit, "+dirty" when modified
	SQLRelease int    `json:"sql_release"`
	Go         string `json:"go"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: "(unknown)", SQLRelease: sqlgen.Latest, Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Version = bi.Main.Version
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && b.Revision != "" {
		b.Revision += "+dirty"
	}
	return b
}

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI("version", versionHelp, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print one JSON object")
	if code, done := c.parseFlags(args); done {
		return code
	}
	b := readBuildInfo()
	if *asJSON {
		out, _ := json.Marshal(b)
		fmt.Fprintf(stdout, "%s\n", out)
		return exitOK
	}
	rev := ""
	if b.Revision != "" {
		rev = " " + b.Revision
	}
	fmt.Fprintf(stdout, "sfgen %s%s, SQL release %d, %s\n", b.Version, rev, b.SQLRelease, b.Go)
	return exitOK
}

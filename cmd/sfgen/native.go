package main

import (
	"path/filepath"

	"github.com/sfgen/sfgen/internal/install"
)

// generatorFlags reads --native (unset: keep; =false: the SQL
// generator) and checks --native-dir against it; dirHelp says, in the
// error for a missing --native-dir, what the directory is for.
func (c *cli) generatorFlags(native bool, dir, dirHelp string) (want install.Choice, code int, ok bool) {
	want = install.Keep
	if c.flagSet("native") {
		want = install.SQL
		if native {
			want = install.Native
		}
	}
	switch {
	case want == install.Native && dir == "":
		return want, c.usageError("--native needs --native-dir DIR: %s", dirHelp), false
	case want == install.Native && !filepath.IsAbs(dir):
		return want, c.usageError("--native-dir %q is not absolute: the database server loads the library by its full path", dir), false
	case want != install.Native && dir != "":
		return want, c.usageError("--native-dir goes with --native"), false
	}
	return want, exitOK, true
}

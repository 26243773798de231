// Package sqlgen renders the SQL and PL/pgSQL that compose, decompose and
// generate Snowflake IDs inside PostgreSQL, from the same
// [snowflake.Layout] value the Go composer uses.
//
// The SQL comes in releases (see CHANGELOG.md), rendered from
// text/template files embedded in the binary; a released release's
// output never changes (a test in package migrations pins the bytes of
// its migration). The only
// values that reach the templates are numbers derived from the layout,
// the node numbers, and a schema name that pgident.ValidateSchema has
// checked and that is always written as a quoted identifier; nothing a user types
// is pasted into SQL as text. Every operator, function and type in the
// latest release is bound to pg_catalog or to sfgen's own schema
// (internal/sqlcheck checks the rendered text).
//
// [Script] renders the plain install script of the latest release, which
// also upgrades an earlier install in place and can run again;
// [ScriptAt] renders an earlier release's. [Migrations] renders the
// release line as goose files, one a release, each upgrading the one
// before ([Upgrade]); [Migration] renders one goose file that installs the
// latest release into an application's directory. [Preflight] renders the
// checks an install makes before it changes anything.
//
// # Templates: a release's folder holds what it changes
//
// Release N is rendered from templates/shared and, for each file name, the
// copy in the newest of templates/release2 to templates/release<N> that
// has one (release 1 stands alone: release 2 rewrote all of its files). A
// new release's folder starts empty; a file is copied into it, whole, and
// changed there only when the release renders something of that file
// differently (a template comment renders nothing), and the folder must
// hold at least one file (and be in sqlgen.go's go:embed line). So release
// 3 has no compose.sql.tmpl or range.sql.tmpl: its copies were release 2's
// but for one comment, and it renders release 2's. The folder of a
// release, and a diff of each of its files with the copy before it, show
// all that the release changes, which copies of every file did not
// (readers had to diff to find that two of six were unchanged).
//
// The price is that a file in an older folder is also every later
// release's that has no copy of it, so an edit there changes them too.
// Released templates' output never changes anyway, and two checks catch
// an edit that would: TestCommittedFilesAreCurrent in package migrations
// fails when the release line rendered now differs from the committed
// files (which TestReleasedFilesNeverChange pins by sha256), and those
// render every released release's up templates, in its own migration and
// in the next one's Down section; this package's golden files in testdata
// render the latest release's script, install migration (with the down
// templates) and upgrade, in another schema, with a node and with none.
// The pins render only the Twitter layout in schema public with node 0/0,
// so treat a released folder's templates as frozen text, comments aside.
package sqlgen

package install

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/idkit"
	"github.com/sfgen/sfgen/internal/migrationdir"
	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// MigrationOptions says what PlanMigrations plans for a goose migrations
// directory, as `sfgen migration` does.
type MigrationOptions struct {
	Dir string // the goose migrations directory
	// SQL is a first install's schema, layout and node. A directory
	// that has sfgen's migrations already says its schema and layout, and
	// a node applies to a first install only (SQL.UnsetNode false is a
	// node asked for).
	SQL sqlgen.Options
	// SchemaSet and LayoutSet say SQL's schema and layout were asked
	// for: they must then be those of the directory's migrations.
	SchemaSet, LayoutSet bool
	// Generator is the generator the schema ends with once the directory
	// is applied; Keep writes the native switch again after upgrades that
	// put the SQL one back.
	Generator Choice
	// NativeDir is, with Native, the directory on the database servers
	// where `sfgen build-native` builds the library (under NativeDir's
	// directory for the layout); Optional makes the switch warn rather
	// than fail where it cannot happen.
	NativeDir string
	Optional  bool
	// Format is the migration tool's file layout for a directory without
	// sfgen's migrations (default goose); a directory with them keeps
	// theirs, and FormatSet says Format was asked for: it must then be
	// theirs.
	Format    migrationdir.Format
	FormatSet bool
}

// A MigrationStep is one step of a MigrationPlan: a file to write, or,
// with no Suffix, a Note to tell.
type MigrationStep struct {
	Suffix  string // the file's name after its version, e.g. "_sfgen_release_3.sql"
	Content []byte
	// More are further files of the same migration, written under the
	// same version (golang-migrate's down file).
	More []migrationdir.File
	Note string // for the user, on one line ("up to date: ...")
}

// A MigrationPlan is what one run writes into a directory, in order.
type MigrationPlan struct {
	Steps  []MigrationStep
	Format migrationdir.Format // the layout the files are written in
}

// A UsageError is an error of what was asked (a flag that conflicts with
// the directory, a file that is there already), not of the machine: the
// CLI exits 2 for it.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// PlanMigrations reads the sfgen migrations in o.Dir and plans the files
// that bring it to what o asks: in a directory without them, the latest
// release's install; in one with them, the upgrades it lacks, for the
// schema and layout their headers name; then the generator switch o asks
// for, if the directory does not make it already.
//
// The plan comes with its steps up to the first that cannot be planned,
// and that error: a run writes its files in order and stops at the first
// that fails.
func PlanMigrations(o MigrationOptions) (*MigrationPlan, error) {
	found, err := migrationdir.Find(o.Dir)
	if errors.Is(err, migrationdir.ErrNotDir) || errors.Is(err, migrationdir.ErrBadHeader) {
		return &MigrationPlan{}, &UsageError{err}
	}
	if err != nil {
		return &MigrationPlan{}, err
	}
	return planMigrations(found, o)
}

// A dirState is where a directory's sfgen migrations leave a schema.
type dirState struct {
	schema    string
	layout    snowflake.Layout
	release   int
	generator string // "sql" or "native"
	library   string // the native generator's library
	optional  bool   // its switch warns rather than fails where it cannot happen
	upgraded  bool   // this plan has upgrades (which put the SQL generator back)
}

func planMigrations(found []migrationdir.Found, o MigrationOptions) (*MigrationPlan, error) {
	p := &MigrationPlan{Format: o.Format}
	if p.Format == "" {
		p.Format = migrationdir.Goose
	}
	if len(found) > 0 {
		format := func(f migrationdir.Found) migrationdir.Format {
			if f.Format == "" {
				return migrationdir.Goose
			}
			return f.Format
		}
		last := found[len(found)-1]
		for _, f := range found {
			if format(f) != format(last) {
				return p, usagef("%s has sfgen migrations of two tools (%s: %s, %s: %s); keep one tool's per directory", o.Dir, f.Name, format(f), last.Name, format(last))
			}
		}
		if o.FormatSet && o.Format != format(last) {
			return p, usagef("--format %s conflicts with %s's sfgen migrations, which are %s's (%s); leave --format out to write %s's", o.Format, o.Dir, format(last), last.Name, format(last))
		}
		p.Format = format(last)
	}
	var at dirState
	if len(found) == 0 {
		if o.Generator == SQL {
			return p, usagef("--native=false: %s has no sfgen migrations, so nothing switches snowflake_next_id() to the native generator", o.Dir)
		}
		if err := p.release(o.SQL, false); err != nil {
			return p, &UsageError{err}
		}
		at = dirState{schema: o.SQL.Schema, layout: o.SQL.Layout, release: sqlgen.Latest, generator: "sql"}
	} else {
		var err error
		if at, err = p.upgrades(found, o); err != nil || at.release == 0 {
			return p, err
		}
	}
	return p, p.generator(at, o)
}

func (p *MigrationPlan) file(suffix string, content []byte) {
	p.Steps = append(p.Steps, MigrationStep{Suffix: suffix, Content: content})
}

// release plans the latest release's install migration, or with upgrade
// its upgrade migration, in the plan's format.
func (p *MigrationPlan) release(o sqlgen.Options, upgrade bool) error {
	if p.Format == migrationdir.Goose {
		render, suffix := sqlgen.Migration, migrationdir.Suffix
		if upgrade {
			render, suffix = sqlgen.Upgrade, migrationdir.UpgradeSuffix(sqlgen.Latest)
		}
		content, err := render(o)
		if err != nil {
			return err
		}
		p.file(suffix, content)
		return nil
	}
	render, name := sqlgen.InstallSections, "sfgen_snowflake"
	if upgrade {
		render, name = sqlgen.UpgradeSections, fmt.Sprintf("sfgen_release_%d", sqlgen.Latest)
	}
	s, err := render(o)
	if err != nil {
		return err
	}
	files, err := p.Format.Files(name, s.Header, s.Up, s.Down)
	if err != nil {
		return err
	}
	p.Steps = append(p.Steps, MigrationStep{Suffix: files[0].Suffix, Content: files[0].Content, More: files[1:]})
	return nil
}

func (p *MigrationPlan) note(format string, args ...any) {
	p.Steps = append(p.Steps, MigrationStep{Note: fmt.Sprintf(format, args...)})
}

// upgrades plans the upgrade to the latest release of a directory that
// has sfgen's migrations found, one file from whichever release they
// leave a schema at: their headers say for which schema and layout. It
// returns where the directory then leaves a schema.
func (p *MigrationPlan) upgrades(found []migrationdir.Found, o MigrationOptions) (dirState, error) {
	dir := o.Dir
	last := found[len(found)-1]
	for _, f := range found {
		if f.Schema != last.Schema || f.Layout != last.Layout {
			return dirState{}, usagef("%s has sfgen migrations for more than one schema or layout (%s: schema %s, layout %s; %s: schema %s, layout %s); keep one install per directory", dir, f.Name, f.Schema, f.Layout, last.Name, last.Schema, last.Layout)
		}
	}
	if !o.SQL.UnsetNode {
		return dirState{}, usagef("%s already installs sfgen (%s); the node flags apply to a first install only: set the node with 'sfgen node --datacenter N --machine N'", dir, last.Name)
	}
	if o.SchemaSet && o.SQL.Schema != last.Schema {
		return dirState{}, usagef("--schema %s conflicts with %s's sfgen migrations, which install into schema %s", o.SQL.Schema, dir, last.Schema)
	}
	if _, err := catalog.ParseSchema(last.Schema); err != nil {
		return dirState{}, usagef("%s: %v", last.Name, err)
	}
	l, err := snowflake.ParseLayout(last.Layout)
	if err != nil {
		return dirState{}, usagef("%s: -- Layout: header: %v", last.Name, err)
	}
	if o.LayoutSet && o.SQL.Layout != l {
		return dirState{}, usagef("--layout %s conflicts with %s's sfgen migrations, which are for layout %s (%s); leave --layout out, or keep another layout's migrations in another directory",
			describeLayout(o.SQL.Layout), dir, describeLayout(l), last.Name)
	}
	at := dirState{schema: last.Schema, layout: l, generator: "sql"}
	for _, f := range found {
		at.release = max(at.release, f.Release)
		switch f.Generator {
		case "":
			at.generator, at.library, at.optional = "sql", "", false
		default:
			at.generator, at.library, at.optional = f.Generator, f.Library, f.Optional
		}
	}
	switch {
	case at.release == sqlgen.Latest:
		if o.Generator == Keep {
			p.note("up to date: %s installs sfgen release %d into schema %s (%s); nothing written", dir, at.release, last.Schema, last.Name)
		}
		return at, nil
	case at.release > sqlgen.Latest:
		return dirState{}, fmt.Errorf("%s installs sfgen release %d, newer than this sfgen's release %d; use a newer sfgen", dir, at.release, sqlgen.Latest)
	}
	so := o.SQL
	so.Schema, so.Layout = last.Schema, l
	if err := p.release(so, true); err != nil {
		return dirState{}, err
	}
	at.release, at.upgraded = sqlgen.Latest, true
	return at, nil
}

// generator plans the migration that gives the schema, at the latest
// release once the directory's migrations have run, the generator asked
// for: the native one with Native, the SQL one with SQL, and with Keep
// the one it had, when an upgrade just planned puts the SQL one back in
// place of the native one.
func (p *MigrationPlan) generator(at dirState, o MigrationOptions) error {
	mo := native.MigrationOptions{Schema: at.schema, Layout: at.layout, Release: at.release, Library: at.library, Optional: at.optional}
	switch {
	case o.Generator == Native:
		mo.Library = filepath.Join(NativeDir(o.NativeDir, at.layout.String()), native.Library)
		mo.Optional = o.Optional
		if at.generator == "native" && !at.upgraded && at.library == mo.Library && at.optional == o.Optional {
			p.note("up to date: %s already switches snowflake_next_id() to the native generator in %s; nothing written", o.Dir, mo.Library)
			return nil
		}
	case o.Generator == SQL:
		if at.generator != "native" || at.upgraded {
			p.note("up to date: %s leaves snowflake_next_id() the SQL generator; nothing written", o.Dir)
			return nil
		}
	case at.generator == "native" && at.upgraded:
		p.note("the upgrade puts the SQL snowflake_next_id() back; %s switches it to the native generator in %s again (as its earlier migration did)", o.Dir, at.library)
	default:
		return nil
	}
	gen, err := sqlgen.Generator(sqlgen.Options{Schema: at.schema, Layout: at.layout})
	if err != nil {
		return err
	}
	var content []byte
	suffix, name := migrationdir.NativeSuffix, "sfgen_native"
	if o.Generator == SQL {
		content, err = native.SQLGeneratorFile(mo, gen)
		suffix, name = migrationdir.SQLGeneratorSuffix, "sfgen_sql_generator"
	} else {
		content, err = native.MigrationFile(mo, gen)
	}
	if err != nil {
		return &UsageError{err}
	}
	if p.Format == migrationdir.Goose {
		p.file(suffix, content)
		return nil
	}
	header, up, down, err := gooseSections(content)
	if err != nil {
		return err
	}
	files, err := p.Format.Files(name, header, up, down)
	if err != nil {
		return err
	}
	p.Steps = append(p.Steps, MigrationStep{Suffix: files[0].Suffix, Content: files[0].Content, More: files[1:]})
	return nil
}

// gooseAnnotation is a line of goose's that marks a statement with
// semicolons inside (a DO block, a function) for goose's splitter; the
// other tools send a section whole and need none.
var gooseAnnotation = regexp.MustCompile(`(?m)^-- \+goose Statement(Begin|End)\n`)

// gooseSections splits a goose migration that package native renders
// whole into its header (the comment block before "-- +goose Up"), its Up
// and its Down, without goose's annotations, for Format.Files to lay out
// in another tool's format: the same SQL, each direction run in the
// tool's one transaction as goose runs it in its own.
func gooseSections(content []byte) (header, up, down []byte, err error) {
	h, rest, ok := strings.Cut(string(content), "\n-- +goose Up\n")
	u, d, ok2 := strings.Cut(rest, "\n-- +goose Down\n")
	if !ok || !ok2 {
		return nil, nil, nil, errors.New("internal error: a generator switch without goose's Up and Down sections")
	}
	u, d = gooseAnnotation.ReplaceAllString(u, ""), gooseAnnotation.ReplaceAllString(d, "")
	if strings.Contains(u+d, "+goose") {
		return nil, nil, nil, errors.New("internal error: a goose annotation left in a generator switch for another tool")
	}
	return []byte(strings.TrimRight(h, "\n") + "\n"), []byte(u), []byte(d), nil
}

// describeLayout names l for messages as the CLI does: a preset by its
// name and spec, a custom layout by its spec.
func describeLayout(l snowflake.Layout) string {
	for _, name := range idkit.PresetNames() {
		if p, _ := idkit.LayoutByName(name); p == l {
			if name == l.String() {
				break
			}
			return fmt.Sprintf("%s (%s)", name, l)
		}
	}
	return l.String()
}

// A MigrationWriter writes one run's migrations into a directory, each
// under a later version than the one before (timestamps a second apart,
// if need be).
type MigrationWriter struct {
	dir   string
	v     migrationdir.Versioning
	width int
	now   func() time.Time
	last  time.Time
}

// NewMigrationWriter writes goose migrations into dir, versioning the
// files by UTC timestamp or, with sequential, after the highest version
// in dir.
func NewMigrationWriter(dir string, sequential bool) *MigrationWriter {
	return NewFormatWriter(dir, migrationdir.Goose, sequential)
}

// NewFormatWriter writes migrations of format f into dir, versioning
// them as NewMigrationWriter does, with the digits f's tool writes;
// tern's always after the highest version, as tern needs.
func NewFormatWriter(dir string, f migrationdir.Format, sequential bool) *MigrationWriter {
	w := &MigrationWriter{dir: dir, v: migrationdir.Timestamp, width: f.Width(), now: time.Now}
	if sequential || f.SequentialOnly() {
		w.v = migrationdir.Sequential
	}
	return w
}

// WriteStep writes the files of one step under one version, as Write
// does one, and returns their paths.
func (w *MigrationWriter) WriteStep(s MigrationStep) ([]string, error) {
	now := w.now().UTC().Truncate(time.Second)
	if !now.After(w.last) {
		now = w.last.Add(time.Second)
	}
	w.last = now
	files := append([]migrationdir.File{{Suffix: s.Suffix, Content: s.Content}}, s.More...)
	paths, err := migrationdir.WriteFiles(w.dir, files, w.v, w.width, now)
	if errors.Is(err, migrationdir.ErrNotDir) || errors.Is(err, migrationdir.ErrExists) {
		return nil, &UsageError{err}
	}
	return paths, err
}

// Write writes one migration file, whole or not at all and never over
// another, and returns its path. A missing directory or a version taken
// is a *UsageError.
func (w *MigrationWriter) Write(suffix string, content []byte) (string, error) {
	now := w.now().UTC().Truncate(time.Second)
	if !now.After(w.last) {
		now = w.last.Add(time.Second)
	}
	w.last = now
	path, err := migrationdir.Write(w.dir, suffix, content, w.v, now)
	if errors.Is(err, migrationdir.ErrNotDir) || errors.Is(err, migrationdir.ErrExists) {
		return "", &UsageError{err}
	}
	return path, err
}

package install

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/idkit"
	"github.com/sfgen/sfgen/internal/migrationdir"
	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestPlanMigrations checks what a run plans for a directory: which files
// in which order (by suffix, with "note: " for what it says instead), and
// which errors are the caller's (usage) and which are not.
func TestPlanMigrations(t *testing.T) {
	twitter := snowflake.Twitter().String()
	discord, _ := idkit.LayoutByName("discord")
	lib := filepath.Join(NativeDir("/srv/sfgen", twitter), native.Library)
	install := func(r int) migrationdir.Found {
		return migrationdir.Found{Name: "1_sfgen_snowflake.sql", Version: 1, Release: r, Schema: "ids", Layout: twitter}
	}
	upgrade := func(v int64, r int) migrationdir.Found {
		return migrationdir.Found{Name: "x_sfgen_release.sql", Version: v, Release: r, Schema: "ids", Layout: twitter}
	}
	switched := func(v int64, r int, library string) migrationdir.Found {
		return migrationdir.Found{Name: "x_sfgen_native.sql", Version: v, Release: r, Schema: "ids", Layout: twitter, Generator: "native", Library: library}
	}
	fresh := sqlgen.Options{Schema: "ids", Layout: snowflake.Twitter(), UnsetNode: true}
	const latest = sqlgen.Latest
	// upgrades are the upgrade files from release from to the latest.
	// From any earlier release, one upgrade file to the latest.
	upgrades := func(from int, then ...string) []string {
		return append([]string{migrationdir.UpgradeSuffix(latest)}, then...)
	}
	type tc struct {
		name  string
		found []migrationdir.Found
		o     MigrationOptions
		want  []string // suffixes, or "note: <prefix>"
		usage bool     // the error is a *UsageError
		err   string   // the error's text contains it; "" for no error
	}
	tool := func(f migrationdir.Format, r int) migrationdir.Found {
		found := install(r)
		found.Format = f
		return found
	}
	for _, tc := range []tc{
		{name: "fresh dir", o: MigrationOptions{SQL: fresh},
			want: []string{migrationdir.Suffix}},
		{name: "fresh dir, golang-migrate", o: MigrationOptions{SQL: fresh, Format: migrationdir.GolangMigrate, FormatSet: true},
			want: []string{"_sfgen_snowflake.up.sql"}},
		{name: "fresh dir, tern", o: MigrationOptions{SQL: fresh, Format: migrationdir.Tern, FormatSet: true},
			want: []string{"_sfgen_snowflake.sql"}},
		{name: "fresh dir, dbmate, native", o: MigrationOptions{Dir: "db", SQL: fresh, Format: migrationdir.Dbmate, FormatSet: true, Generator: Native, NativeDir: "/srv/sfgen"},
			want: []string{"_sfgen_snowflake.sql", "_sfgen_native.sql"}},
		{name: "fresh dir, golang-migrate, native", o: MigrationOptions{Dir: "db", SQL: fresh, Format: migrationdir.GolangMigrate, FormatSet: true, Generator: Native, NativeDir: "/srv/sfgen"},
			want: []string{"_sfgen_snowflake.up.sql", "_sfgen_native.up.sql"}},
		{name: "tern dir, native after an upgrade", found: []migrationdir.Found{tool(migrationdir.Tern, 7)}, o: MigrationOptions{SQL: fresh, Generator: Native, NativeDir: "/srv/sfgen"},
			want: []string{fmt.Sprintf("_sfgen_release_%d.sql", latest), "_sfgen_native.sql"}},
		{name: "tern dir, --native=false after native", found: []migrationdir.Found{tool(migrationdir.Tern, latest), {Name: "2_sfgen_native.sql", Version: 2, Release: latest, Schema: "ids", Layout: twitter, Generator: "native", Library: lib, Format: migrationdir.Tern}}, o: MigrationOptions{SQL: fresh, Generator: SQL},
			want: []string{"_sfgen_sql_generator.sql"}},
		{name: "dbmate dir, upgrade in its format", found: []migrationdir.Found{tool(migrationdir.Dbmate, 7)}, o: MigrationOptions{SQL: fresh},
			want: []string{fmt.Sprintf("_sfgen_release_%d.sql", latest)}},
		{name: "golang-migrate dir, upgrade in its format", found: []migrationdir.Found{tool(migrationdir.GolangMigrate, 7)}, o: MigrationOptions{SQL: fresh},
			want: []string{fmt.Sprintf("_sfgen_release_%d.up.sql", latest)}},
		{name: "tern dir, --format goose", found: []migrationdir.Found{tool(migrationdir.Tern, 7)}, o: MigrationOptions{Dir: "db", SQL: fresh, Format: migrationdir.Goose, FormatSet: true},
			usage: true, err: "--format goose conflicts with db's sfgen migrations, which are tern's"},
		{name: "two tools in one dir", found: []migrationdir.Found{tool(migrationdir.Tern, 7), tool(migrationdir.Dbmate, 7)}, o: MigrationOptions{Dir: "db", SQL: fresh},
			usage: true, err: "sfgen migrations of two tools"},
		{name: "fresh dir, native", o: MigrationOptions{SQL: fresh, Generator: Native, NativeDir: "/srv/sfgen"},
			want: []string{migrationdir.Suffix, migrationdir.NativeSuffix}},
		{name: "fresh dir, --native=false", o: MigrationOptions{Dir: "db", SQL: fresh, Generator: SQL},
			usage: true, err: "--native=false: db has no sfgen migrations"},
		{name: "upgrade from release 1", found: []migrationdir.Found{install(1)}, o: MigrationOptions{SQL: fresh},
			want: upgrades(1)},
		{name: "upgrade from release 2", found: []migrationdir.Found{install(1), upgrade(2, 2)}, o: MigrationOptions{SQL: fresh},
			want: upgrades(2)},
		{name: "up to date", found: []migrationdir.Found{install(latest)}, o: MigrationOptions{Dir: "db", SQL: fresh},
			want: []string{fmt.Sprintf("note: up to date: db installs sfgen release %d into schema ids (1_sfgen_snowflake.sql); nothing written", latest)}},
		{name: "up to date, native asked", found: []migrationdir.Found{install(latest)}, o: MigrationOptions{SQL: fresh, Generator: Native, NativeDir: "/srv/sfgen"},
			want: []string{migrationdir.NativeSuffix}},
		{name: "native already", found: []migrationdir.Found{install(latest), switched(2, latest, lib)}, o: MigrationOptions{Dir: "db", SQL: fresh, Generator: Native, NativeDir: "/srv/sfgen"},
			want: []string{"note: up to date: db already switches snowflake_next_id() to the native generator in " + lib}},
		{name: "native switch after upgrade", found: []migrationdir.Found{install(1), upgrade(2, 2), switched(3, 2, lib)}, o: MigrationOptions{Dir: "db", SQL: fresh},
			want: upgrades(2, "note: the upgrade puts the SQL snowflake_next_id() back; db switches it to the native generator in "+lib+" again", migrationdir.NativeSuffix)},
		{name: "native switch kept without upgrade", found: []migrationdir.Found{install(latest), switched(2, latest, lib)}, o: MigrationOptions{SQL: fresh},
			want: []string{"note: up to date: "}},
		{name: "--native=false after native", found: []migrationdir.Found{install(latest), switched(2, latest, lib)}, o: MigrationOptions{SQL: fresh, Generator: SQL},
			want: []string{migrationdir.SQLGeneratorSuffix}},
		{name: "--native=false, SQL already", found: []migrationdir.Found{install(latest)}, o: MigrationOptions{Dir: "db", SQL: fresh, Generator: SQL},
			want: []string{"note: up to date: db leaves snowflake_next_id() the SQL generator; nothing written"}},
		{name: "--native=false after an upgrade", found: []migrationdir.Found{install(2), switched(2, 2, lib)}, o: MigrationOptions{SQL: fresh, Generator: SQL},
			want: upgrades(2, "note: up to date: ")},
		{name: "two schemas", found: []migrationdir.Found{install(1), {Name: "2_sfgen_release_2.sql", Version: 2, Release: 2, Schema: "other", Layout: twitter}}, o: MigrationOptions{SQL: fresh},
			usage: true, err: "more than one schema or layout"},
		{name: "node flags on an upgrade", found: []migrationdir.Found{install(1)}, o: MigrationOptions{SQL: sqlgen.Options{Schema: "ids", Layout: snowflake.Twitter(), Machine: 1}},
			usage: true, err: "the node flags apply to a first install only"},
		{name: "conflicting schema", found: []migrationdir.Found{install(1)}, o: MigrationOptions{Dir: "db", SQL: sqlgen.Options{Schema: "public", Layout: snowflake.Twitter(), UnsetNode: true}, SchemaSet: true},
			usage: true, err: "--schema public conflicts with db's sfgen migrations, which install into schema ids"},
		{name: "schema not asked for", found: []migrationdir.Found{install(1)}, o: MigrationOptions{SQL: sqlgen.Options{Schema: "public", Layout: snowflake.Twitter(), UnsetNode: true}},
			want: upgrades(1)},
		{name: "conflicting layout", found: []migrationdir.Found{install(1)}, o: MigrationOptions{Dir: "db", SQL: sqlgen.Options{Schema: "ids", Layout: discord, UnsetNode: true}, LayoutSet: true},
			usage: true, err: "--layout discord (" + discord.String() + ") conflicts with db's sfgen migrations, which are for layout twitter (" + twitter + ")"},
		{name: "layout not asked for", found: []migrationdir.Found{install(latest)}, o: MigrationOptions{SQL: sqlgen.Options{Schema: "ids", Layout: discord, UnsetNode: true}},
			want: []string{"note: up to date: "}},
		{name: "newer release", found: []migrationdir.Found{install(sqlgen.Latest + 1)}, o: MigrationOptions{SQL: fresh},
			err: "newer than this sfgen's release"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planMigrations(tc.found, tc.o)
			if p == nil {
				t.Fatalf("planMigrations = nil plan, %v", err)
			}
			var ue *UsageError
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("planMigrations: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("planMigrations error %v; want one with %q", err, tc.err)
			case tc.err != "" && errors.As(err, &ue) != tc.usage:
				t.Fatalf("planMigrations error %v (%T): usage error %v, want %v", err, err, !tc.usage, tc.usage)
			}
			var got []string
			for _, s := range p.Steps {
				if s.Suffix == "" {
					got = append(got, "note: "+s.Note)
				} else {
					got = append(got, s.Suffix)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("steps %q; want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Fatalf("steps %q; want %q", got, tc.want)
				}
			}
		})
	}
}

// TestPlanMigrationsContent checks the files' contents: a first install
// is sqlgen.Migration's, an upgrade for the directory's schema and layout
// (not the options'), and a native switch names the library under the
// layout's directory, optional when asked.
func TestPlanMigrationsContent(t *testing.T) {
	o := sqlgen.Options{Schema: "ids", Layout: snowflake.Twitter(), UnsetNode: true}
	p, err := planMigrations(nil, MigrationOptions{SQL: o, Generator: Native, NativeDir: "/srv/sfgen", Optional: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := sqlgen.Migration(o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p.Steps[0].Content, want) {
		t.Errorf("first install differs from sqlgen.Migration")
	}
	lib := filepath.Join(NativeDir("/srv/sfgen", snowflake.Twitter().String()), native.Library)
	if !bytes.Contains(p.Steps[1].Content, []byte("-- Generator: native-if-available "+lib+"\n")) {
		t.Errorf("native switch does not name %s, optional:\n%.400s", lib, p.Steps[1].Content)
	}

	discord, _ := idkit.LayoutByName("discord")
	found := []migrationdir.Found{{Name: "1_sfgen_snowflake.sql", Version: 1, Release: sqlgen.Latest - 1, Schema: "app_ids", Layout: discord.String()}}
	p, err = planMigrations(found, MigrationOptions{SQL: sqlgen.Options{Schema: "public", Layout: snowflake.Twitter(), UnsetNode: true}})
	if err != nil {
		t.Fatal(err)
	}
	want, err = sqlgen.Upgrade(sqlgen.Options{Schema: "app_ids", Layout: discord, UnsetNode: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 1 || !bytes.Equal(p.Steps[0].Content, want) {
		t.Errorf("upgrade differs from sqlgen.Upgrade for the directory's schema and layout")
	}
}

// TestPlanMigrationsReadsDir checks that PlanMigrations reads the
// directory: a missing one and a file named like sfgen's without its
// header are usage errors, and a directory written with a plan plans
// nothing more.
func TestPlanMigrationsReadsDir(t *testing.T) {
	o := MigrationOptions{Dir: filepath.Join(t.TempDir(), "missing"), SQL: sqlgen.Options{Schema: "ids", Layout: snowflake.Twitter(), UnsetNode: true}}
	var ue *UsageError
	if _, err := PlanMigrations(o); !errors.As(err, &ue) || !errors.Is(err, migrationdir.ErrNotDir) {
		t.Errorf("missing dir: %v; want a usage error wrapping ErrNotDir", err)
	}
	o.Dir = t.TempDir()
	p, err := PlanMigrations(o)
	if err != nil || len(p.Steps) != 1 {
		t.Fatalf("empty dir: %v, %d steps; want one", err, len(p.Steps))
	}
	if _, err := NewMigrationWriter(o.Dir, true).Write(p.Steps[0].Suffix, p.Steps[0].Content); err != nil {
		t.Fatal(err)
	}
	if p, err = PlanMigrations(o); err != nil || len(p.Steps) != 1 || p.Steps[0].Suffix != "" {
		t.Errorf("written dir: %v, %+v; want one note", err, p)
	}
	if err := os.WriteFile(filepath.Join(o.Dir, "00002_sfgen_release_2.sql"), []byte("-- not sfgen's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := PlanMigrations(o); !errors.As(err, &ue) || !errors.Is(err, migrationdir.ErrBadHeader) {
		t.Errorf("bad header: %v; want a usage error wrapping ErrBadHeader", err)
	}
}

// TestMigrationWriterVersions checks that one writer's files have
// versions a second apart when the clock has not moved, that another run
// in the same second takes the next free version (issue 28: it failed
// with "version … is taken"), and that sequential versions count up.
func TestMigrationWriterVersions(t *testing.T) {
	dir := t.TempDir()
	w := NewMigrationWriter(dir, false)
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	w.now = func() time.Time { return at }
	var names []string
	for _, s := range []string{"_a.sql", "_b.sql", "_c.sql"} {
		path, err := w.Write(s, []byte("-- x\n"))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Base(path))
	}
	want := []string{"20260102030405_a.sql", "20260102030406_b.sql", "20260102030407_c.sql"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("timestamp versions %q; want %q", names, want)
	}
	var ue *UsageError
	other := NewMigrationWriter(dir, false)
	other.now = func() time.Time { return at }
	if path, err := other.Write("_d.sql", []byte("-- x\n")); err != nil || filepath.Base(path) != "20260102030408_d.sql" {
		t.Errorf("another run in the same second: %s, %v; want 20260102030408_d.sql, after the highest", path, err)
	}
	seq := NewMigrationWriter(dir, true)
	path, err := seq.Write("_e.sql", []byte("-- x\n"))
	if err != nil || filepath.Base(path) != "20260102030409_e.sql" {
		t.Errorf("sequential after 20260102030408_d.sql: %s, %v; want 20260102030409_e.sql", path, err)
	}
	if _, err := NewMigrationWriter(filepath.Join(dir, "missing"), true).Write("_f.sql", nil); !errors.As(err, &ue) {
		t.Errorf("missing dir: %v; want a usage error", err)
	}
}

// TestNativeSwitchFormats: the native switch and the switch back, in each
// format but goose's, are the goose files' header and sections laid out
// as Format.Files lays out the release line's: the same SQL, without
// goose's annotations, which the other tools do not read.
func TestNativeSwitchFormats(t *testing.T) {
	fresh := sqlgen.Options{Schema: "ids", Layout: snowflake.Twitter(), UnsetNode: true}
	gooseFiles := map[Choice][]byte{}
	for _, gen := range []Choice{Native, SQL} {
		found := []migrationdir.Found{}
		if gen == SQL {
			lib := filepath.Join(NativeDir("/srv/sfgen", snowflake.Twitter().String()), native.Library)
			found = []migrationdir.Found{{Name: "1_sfgen_snowflake.sql", Version: 1, Release: sqlgen.Latest, Schema: "ids", Layout: snowflake.Twitter().String()},
				{Name: "2_sfgen_native.sql", Version: 2, Release: sqlgen.Latest, Schema: "ids", Layout: snowflake.Twitter().String(), Generator: "native", Library: lib}}
		}
		for _, f := range migrationdir.Formats {
			for i := range found {
				found[i].Format = f
			}
			p, err := planMigrations(found, MigrationOptions{SQL: fresh, Generator: gen, NativeDir: "/srv/sfgen", Format: f, FormatSet: len(found) == 0})
			if err != nil {
				t.Fatalf("%s %v: %v", f, gen, err)
			}
			s := p.Steps[len(p.Steps)-1]
			if f == migrationdir.Goose {
				gooseFiles[gen] = s.Content
				continue
			}
			header, up, down, err := gooseSections(gooseFiles[gen])
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(s.Suffix, "_"), ".up.sql"), ".sql")
			want, err := f.Files(name, header, up, down)
			if err != nil {
				t.Fatal(err)
			}
			got := append([]migrationdir.File{{Suffix: s.Suffix, Content: s.Content}}, s.More...)
			if len(got) != len(want) {
				t.Fatalf("%s %v: %d files, want %d", f, gen, len(got), len(want))
			}
			all := ""
			for i := range got {
				if got[i].Suffix != want[i].Suffix || string(got[i].Content) != string(want[i].Content) {
					t.Errorf("%s %v: file %d is %s, want %s with the goose file's sections", f, gen, i, got[i].Suffix, want[i].Suffix)
				}
				all += string(got[i].Content)
			}
			if strings.Contains(all, "+goose") || !strings.Contains(all, "DO $sfgen_native$") || !strings.Contains(all, "DROP FUNCTION IF EXISTS \"ids\".snowflake_next_id_c(bigint);") {
				t.Errorf("%s %v: a goose annotation, or no switch or switch back:\n%s", f, gen, all)
			}
		}
	}
}

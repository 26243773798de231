package install

import (
	"bytes"
	"io"
	"io/fs"
	"time"

	"github.com/sfgen/sfgen/internal/sqlgen"
)

// A releaseFS is the migrations goose applies for one target: its files,
// read-only, at the root and nowhere else.
type releaseFS []sqlgen.File

// FS returns, as goose reads it, the one migration `sfgen install` applies
// for o: the latest release's install (sqlgen.Migration), versioned as
// that release. Its Up installs into a schema without sfgen and upgrades,
// in place, a schema at any earlier release, whose version table then
// holds earlier versions that goose leaves alone.
func FS(o sqlgen.Options) (fs.FS, error) {
	install, err := sqlgen.Migration(o)
	if err != nil {
		return nil, err
	}
	return releaseFS{{Name: sqlgen.MigrationName(sqlgen.Latest), Release: sqlgen.Latest, SQL: install}}, nil
}

func (r releaseFS) Open(name string) (fs.File, error) {
	if name == "." {
		return &releaseDir{r: r}, nil
	}
	for _, f := range r {
		if f.Name == name {
			return &releaseFile{info: fileInfo{name: f.Name, size: int64(len(f.SQL))}, Reader: bytes.NewReader(f.SQL)}, nil
		}
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// ReadDir lists the root, the only directory.
func (r releaseFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name != "." {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	entries := make([]fs.DirEntry, len(r))
	for i, f := range r {
		entries[i] = fs.FileInfoToDirEntry(fileInfo{name: f.Name, size: int64(len(f.SQL))})
	}
	return entries, nil
}

type releaseFile struct {
	info fileInfo
	*bytes.Reader
}

func (f *releaseFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *releaseFile) Close() error               { return nil }

// releaseDir is the root, opened: ReadDir(n) hands out its entries in
// turns, as fs.ReadDirFile says.
type releaseDir struct {
	r    releaseFS
	read int
}

func (d *releaseDir) Stat() (fs.FileInfo, error) { return fileInfo{name: ".", dir: true}, nil }
func (d *releaseDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: ".", Err: fs.ErrInvalid}
}
func (d *releaseDir) Close() error { return nil }

func (d *releaseDir) ReadDir(n int) ([]fs.DirEntry, error) {
	all, _ := d.r.ReadDir(".")
	rest := all[d.read:]
	if n <= 0 {
		d.read = len(all)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	rest = rest[:min(n, len(rest))]
	d.read += len(rest)
	return rest, nil
}

// fileInfo describes a file of a releaseFS, or its root.
type fileInfo struct {
	name string
	size int64
	dir  bool
}

func (i fileInfo) Name() string { return i.name }
func (i fileInfo) Size() int64  { return i.size }
func (i fileInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }

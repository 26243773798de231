package pgcluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// markerName is the file in a cluster's directory that says the directory
// is ours and which process owns it.
const markerName = "sfpgcluster"

// dirPrefix begins the name of every cluster directory.
const dirPrefix = "sfpg"

// markerText is the marker's content for the current process.
func markerText() string {
	pid := os.Getpid()
	return fmt.Sprintf("sfgen pgcluster\nowner %d %s\n", pid, startTime(pid))
}

// readMarker returns the owner pid and start time ("" if unknown) recorded
// in dir's marker, and false when dir has no valid marker.
func readMarker(dir string) (pid int, start string, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, markerName))
	if err != nil {
		return 0, "", false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 2 || lines[0] != "sfgen pgcluster" {
		return 0, "", false
	}
	f := strings.Fields(lines[1])
	if len(f) < 2 || f[0] != "owner" {
		return 0, "", false
	}
	pid, err = strconv.Atoi(f[1])
	if err != nil || pid <= 0 {
		return 0, "", false
	}
	if len(f) > 2 {
		start = f[2]
	}
	return pid, start, true
}

// processAlive reports whether the process with this pid and start time
// is still running. An empty start time matches any.
func processAlive(pid int, start string) bool {
	if !pidExists(pid) {
		return false
	}
	if start == "" {
		return true
	}
	now := startTime(pid)
	return now == "" || now == start
}

// postmasterPID returns the pid in dataDir/postmaster.pid, or 0.
func postmasterPID(dataDir string) int {
	f, err := os.Open(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	if !s.Scan() {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s.Text()))
	if err != nil {
		return 0
	}
	return pid
}

// stale reports whether dir is a cluster directory of ours whose owner and
// postmaster are both gone.
func stale(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() { // not a symlink, not a file
		return false
	}
	pid, start, ok := readMarker(dir)
	if !ok || processAlive(pid, start) {
		return false
	}
	if pm := postmasterPID(filepath.Join(dir, "data")); pm > 0 && pidExists(pm) {
		return false
	}
	return true
}

// sweep removes the stale cluster directories in roots, ignoring errors:
// what cannot be removed now may be next time.
func sweep(roots ...string) {
	seen := map[string]bool{}
	for _, root := range roots {
		if root == "" || seen[root] {
			continue
		}
		seen[root] = true
		matches, _ := filepath.Glob(filepath.Join(root, dirPrefix+"*"))
		for _, dir := range matches {
			if stale(dir) {
				os.RemoveAll(dir)
			}
		}
	}
}

package pgcluster

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"
)

// Dir returns the cluster's own directory, which the server's OS user may
// write: for files a command run by [Cluster.Single] writes, such as
// valgrind's.
func (c *Cluster) Dir() string { return c.dir }

// Single shuts the server down (a fast shutdown) and runs a single-user
// backend, postgres --single, on the cluster's data as the server's OS
// user, connected to database db, with args before the database name
// (such as "-c", "track_functions=all"). Its standard input is input (in
// single-user mode a newline ends a statement) and Single returns what
// it wrote to standard output and error. With wrap, the backend runs
// under that command (valgrind and its options: wrap[0] is looked up in
// PATH); extraEnv is added to its environment (LD_PRELOAD, say). The server
// stays down until [Cluster.Restart]. ctx bounds the run. It returns
// [ErrStopped] after Stop.
func (c *Cluster) Single(ctx context.Context, db, input string, args, wrap, extraEnv []string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.stopped:
		return "", ErrStopped
	default:
	}
	c.shutdown(interrupt)
	if c.logFile != nil {
		c.logFile.Close()
		c.logFile = nil
	}
	argv := append([]string{filepath.Join(c.binDir, "postgres"), "--single", "-D", c.dataDir}, args...)
	argv = append(argv, db)
	if len(wrap) > 0 {
		path, err := exec.LookPath(wrap[0])
		if err != nil {
			return "", fmt.Errorf("single-user backend: %w", err)
		}
		argv = append(append([]string{path}, wrap[1:]...), argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = c.dir
	cmd.Env = append(env(), extraEnv...)
	cmd.SysProcAttr = procAttr(c.runAs)
	cmd.Stdin = bytes.NewBufferString(input)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("single-user backend: %w\n%s", err, tail(out.Bytes()))
	}
	return out.String(), nil
}

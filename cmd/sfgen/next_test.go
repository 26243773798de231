package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	snowflake "github.com/sfgen/sfgen"
)

// parseLines parses stdout of next as one ID a line.
func parseLines(t *testing.T, out string) []snowflake.ID {
	t.Helper()
	if out == "" {
		return nil
	}
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("output does not end in a newline: %q", out[max(0, len(out)-40):])
	}
	var ids []snowflake.ID
	for line := range strings.SplitSeq(strings.TrimSuffix(out, "\n"), "\n") {
		id, err := snowflake.ParseID(line)
		if err != nil {
			t.Fatalf("line %d: %v", len(ids)+1, err)
		}
		ids = append(ids, id)
	}
	return ids
}

// checkIDs checks that ids increase strictly and belong to node dc, m.
func checkIDs(t *testing.T, ids []snowflake.ID, dc, m int64) {
	t.Helper()
	for i, id := range ids {
		if i > 0 && id <= ids[i-1] {
			t.Fatalf("ID %d = %d after %d; want strictly increasing", i, id, ids[i-1])
		}
		p, err := snowflake.Decompose(id)
		if err != nil || p.Datacenter != dc || p.Machine != m {
			t.Fatalf("Decompose(%d) = %+v, %v; want datacenter %d, machine %d", id, p, err, dc, m)
		}
	}
}

func TestNext(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		count int
		dc, m int64
	}{
		{nil, 1, 0, 0},
		{[]string{"--count", "1"}, 1, 0, 0},
		{[]string{"--datacenter", "31", "--machine", "31"}, 1, 31, 31},
		{[]string{"--count=20000", "--datacenter=3", "--machine=7"}, 20000, 3, 7},
		{[]string{"--datacenter", "0", "--machine", "1", "--count", "5000"}, 5000, 0, 1},
	} {
		code, out, errOut := sfgen(t, append([]string{"next"}, tc.args...)...)
		if code != 0 || errOut != "" {
			t.Fatalf("sfgen next %q = exit %d, stderr %q", tc.args, code, errOut)
		}
		ids := parseLines(t, out)
		if len(ids) != tc.count {
			t.Fatalf("sfgen next %q printed %d IDs, want %d", tc.args, len(ids), tc.count)
		}
		checkIDs(t, ids, tc.dc, tc.m)
	}
}

func TestNextJSON(t *testing.T) {
	code, out, errOut := sfgen(t, "next", "--json", "--count", "5000", "--datacenter", "2", "--machine", "5")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 5000 {
		t.Fatalf("%d lines, want 5000", len(lines))
	}
	var ids []snowflake.ID
	for _, line := range lines {
		var got idJSON
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		// The same shape, in the same order, as compose and decompose.
		p, _ := snowflake.Decompose(got.ID)
		want, _ := json.Marshal(idJSON{got.ID, got.ID.Base32(), got.ID.Base58(), p.Timestamp, p.Time().Format(timeFormat), p.Datacenter, p.Machine, p.Sequence, snowflake.Twitter()})
		if line != string(want) {
			t.Fatalf("line %s, want %s", line, want)
		}
		ids = append(ids, got.ID)
	}
	checkIDs(t, ids, 2, 5)
}

// TestNextRunsInARow runs next many times in a row for the same node, as
// a shell loop would: in-process runs are fast enough to share a
// millisecond, and must not repeat IDs.
func TestNextRunsInARow(t *testing.T) {
	var all []snowflake.ID
	for i := range 300 {
		count := "1"
		if i%50 == 0 {
			count = "4097"
		}
		code, out, errOut := sfgen(t, "next", "--count", count, "--datacenter", "0", "--machine", "9")
		if code != 0 || errOut != "" {
			t.Fatalf("run %d: exit %d, stderr %q", i, code, errOut)
		}
		all = append(all, parseLines(t, out)...)
	}
	checkIDs(t, all, 0, 9)
}

func TestNextUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the one line on stderr
	}{
		{[]string{"--datacenter", "32"}, "sfgen next: datacenter 32 out of range [0, 31]"},
		{[]string{"--datacenter", "-1"}, "sfgen next: datacenter -1 out of range [0, 31]"},
		{[]string{"--machine", "32", "--datacenter", "99"}, "sfgen next: datacenter 99 out of range [0, 31]"},
		{[]string{"--machine", "-1"}, "sfgen next: machine -1 out of range [0, 31]"},
		{[]string{"--machine", "x"}, `sfgen next: machine "x" is not a whole number; want an integer in [0, 31]`},
		{[]string{"--machine", "99999999999999999999"}, "sfgen next: machine 99999999999999999999 out of range [0, 31]"},
		{[]string{"--count", "0"}, "sfgen next: count 0 out of range [1, 10000000]"},
		{[]string{"--count", "-5"}, "sfgen next: count -5 out of range [1, 10000000]"},
		{[]string{"--count", "10000001"}, "sfgen next: count 10000001 out of range [1, 10000000]"},
		{[]string{"--count", "99999999999999999999"}, "sfgen next: count 99999999999999999999 out of range [1, 10000000]"},
		{[]string{"--count", "1e3"}, `sfgen next: count "1e3" is not a whole number; want an integer in [1, 10000000]`},
		{[]string{"--count", ""}, `sfgen next: count "" is not a whole number; want an integer in [1, 10000000]`},
		{[]string{"--count"}, "sfgen next: flag needs an argument: --count; see 'sfgen next --help'"},
		{[]string{"--sequence", "1"}, "sfgen next: unknown flag --sequence; see 'sfgen next --help'"},
		{[]string{"5"}, `sfgen next: unexpected argument "5"; next takes only flags`},
	} {
		code, out, errOut := sfgen(t, append([]string{"next"}, tc.args...)...)
		if code != 2 || out != "" || errOut != tc.want+"\n" {
			t.Errorf("sfgen next %q = exit %d, stdout %q, stderr %q; want exit 2, no stdout, stderr %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// cancelWriter cancels a context on its first write.
type cancelWriter struct {
	bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	w.cancel()
	return w.Buffer.Write(p)
}

func TestNextInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"next", "--count", "5"}, &out, &errOut)
	if code != 1 || out.String() != "" || errOut.String() != "sfgen next: interrupted after 0 of 5 IDs\n" {
		t.Errorf("next with a cancelled context = %d, %q, %q", code, out.String(), errOut.String())
	}

	// Cancelled while writing: the IDs written so far are whole lines.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	w := &cancelWriter{cancel: cancel}
	errOut.Reset()
	code = run(ctx, []string{"next", "--count", "10000000"}, w, &errOut)
	ids := parseLines(t, w.String())
	if want := fmt.Sprintf("sfgen next: interrupted after %d of 10000000 IDs\n", len(ids)); code != 1 || errOut.String() != want {
		t.Errorf("next cancelled while writing = %d, %q; want 1, %q", code, errOut.String(), want)
	}
	if len(ids) == 0 || len(ids) > 20000 {
		t.Errorf("next cancelled while writing printed %d IDs; want some, and no more than a few batches", len(ids))
	}
	checkIDs(t, ids, 0, 0)
}

type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, errors.New("disk full") }

func TestNextWriteError(t *testing.T) {
	var errOut bytes.Buffer
	code := run(context.Background(), []string{"next", "--count", "1000000"}, failWriter{}, &errOut)
	if code != 1 || errOut.String() != "sfgen next: write: disk full\n" {
		t.Errorf("next to a failing writer = %d, %q; want 1 and one line", code, errOut.String())
	}
}

package main

import (
	"bytes"
	"math"
	"strings"
	"testing"

	snowflake "github.com/sfgen/sfgen"
)

// TestIntFlag parses one command line with an int64, a uint64 and a
// field flag, as parse does for every command.
func TestIntFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		n       int64
		seed    uint64
		seedSet bool
		err     string
	}{
		{nil, 5, 0, false, ""},
		{[]string{"--n", "7", "--seed", "18446744073709551615"}, 7, math.MaxUint64, true, ""},
		{[]string{"--n=+9", "--seed", "0"}, 9, 0, true, ""},
		{[]string{"--n", "007"}, 7, 0, false, ""},
		{[]string{"--n", "11"}, 0, 0, false, "n 11 out of range [1, 10]"},
		{[]string{"--n", "-0x5"}, 0, 0, false, `n "-0x5" is not a whole number; want an integer in [1, 10]`},
		{[]string{"--n", "1_0"}, 0, 0, false, `n "1_0" is not a whole number; want an integer in [1, 10]`},
		{[]string{"--n", " 5"}, 0, 0, false, `n " 5" is not a whole number; want an integer in [1, 10]`},
		{[]string{"--seed", "-1"}, 0, 0, false, "seed -1 out of range [0, 18446744073709551615]"},
		{[]string{"--seed", "18446744073709551616"}, 0, 0, false, "seed 18446744073709551616 out of range [0, 18446744073709551615]"},
		{[]string{"--machine", "99999999999999999999999"}, 0, 0, false, "machine 99999999999999999999999 out of range [0, 31]"},
		// Checked in the order defined, not the order given.
		{[]string{"--machine", "32", "--n", "0"}, 0, 0, false, "n 0 out of range [1, 10]"},
	} {
		var out, errOut bytes.Buffer
		c := newCLI("test", "sfgen test", &out, &errOut)
		n := c.intVar("n", "`N`", 5, 1, 10)
		seed := c.uint64Var("seed", "`S`", "random")
		m := c.fieldVar(snowflake.Twitter(), snowflake.FieldMachine, "`N`", "")
		_, code, done := c.parse(tc.args)
		if tc.err != "" {
			if code != exitUsage || !done || errOut.String() != "sfgen test: "+tc.err+"\n" {
				t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut.String(), tc.err)
			}
			continue
		}
		if done || n.Int64() != tc.n || seed.Uint64() != tc.seed || seed.set != tc.seedSet || m.Int64() != 0 {
			t.Errorf("%q: done %v, n %d, seed %d (given %v), machine %d; want %d, %d (%v), 0; stderr %q",
				tc.args, done, n.Int64(), seed.Uint64(), seed.set, m.Int64(), tc.n, tc.seed, tc.seedSet, errOut.String())
		}
	}
}

// TestFlagsHelpRanges: every command's help gives each integer flag's
// range after its value's name.
func TestFlagsHelpRanges(t *testing.T) {
	ranges := map[string]string{
		"--datacenter N": "N (0 to 31)", "--machine N": "N (0 to 31)", "--sequence N": "N (0 to 4095)",
		"--timestamp MS": "MS (1288834974657 to 3487858230208)", "--count N": "N (", "--seed S": "S (0 to 18446744073709551615)",
		"--clients N": "N (1 to 1000)", "--rounds N": "N (0 to 600)", "--duration D": "D (100ms to 24h)",
	}
	seen := 0
	for _, cmd := range commands {
		_, out, _ := sfgen(t, cmd.name, "--help")
		lines := strings.Split(out, "\n")
		for i, line := range lines {
			want, ok := ranges[strings.TrimSpace(line)]
			if !ok {
				continue
			}
			if cmd.name == "node" {
				// The node flags' range is the schema's layout's, read from the database.
				want = "N (in the range of the schema's layout: 0 to 31 in Twitter's"
			}
			seen++
			if i+1 == len(lines) || !strings.Contains(lines[i+1], want) {
				t.Errorf("sfgen %s --help: %s has no %q:\n%s", cmd.name, strings.TrimSpace(line), want, out)
			}
		}
	}
	if seen < 20 {
		t.Errorf("found %d integer flags in the commands' help; the test or the help is broken", seen)
	}
}

// TestFlagErrorsSayDoubleDash: every command's errors from package flag
// name flags --name, as help does.
func TestFlagErrorsSayDoubleDash(t *testing.T) {
	for _, cmd := range commands {
		_, help, _ := sfgen(t, cmd.name, "--help")
		for _, tc := range []struct{ arg, want string }{
			{"-bogus", "unknown flag --bogus"},
			{"--bogus=1", "unknown flag --bogus"},
			{"--json=maybe", `invalid boolean value "maybe" for --json: parse error`},
		} {
			// Only commands with a --json flag (a line of its own in the
			// flag list; help text may name other commands' --json).
			if tc.arg == "--json=maybe" && !strings.Contains(help, "\n  --json\n") && !strings.Contains(help, "\n  --json ") {
				continue
			}
			code, _, errOut := sfgen(t, cmd.name, tc.arg)
			want := "sfgen " + cmd.name + ": " + tc.want + "; see 'sfgen " + cmd.name + " --help'\n"
			if code != exitUsage || errOut != want {
				t.Errorf("sfgen %s %s: exit %d, stderr %q; want 2 and %q", cmd.name, tc.arg, code, errOut, want)
			}
		}
	}
	for _, args := range [][]string{{"bench", "--duration", "soon"}, {"compose", "--timestamp"}} {
		want := map[string]string{
			"bench":   `sfgen bench: invalid value "soon" for flag --duration: parse error; see 'sfgen bench --help'`,
			"compose": `sfgen compose: flag needs an argument: --timestamp; see 'sfgen compose --help'`,
		}[args[0]] + "\n"
		if code, _, errOut := sfgen(t, args...); code != exitUsage || errOut != want {
			t.Errorf("sfgen %q: exit %d, stderr %q; want 2 and %q", args, code, errOut, want)
		}
	}
}

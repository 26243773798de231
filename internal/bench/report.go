package bench

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes r as a short table for people.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "single-row INSERTs, %d clients, %d rounds of %.1fs per variant (alternating), synchronous_commit=%s, PostgreSQL %s, node %d/%d\n",
		r.Clients, r.Rounds, r.RoundSeconds, r.SynchronousCommit, r.ServerVersion, r.Node[0], r.Node[1])
	fmt.Fprintf(&b, "%-19s %10s %10s %11s %12s  %s\n", "id default", "rows", "tps", "WAL/row", "seq WAL/ID", "tps per round")
	for _, v := range []Variant{r.Bigserial, r.Snowflake} {
		seq := "n/a"
		if v.SeqWALPerID >= 0 {
			seq = fmt.Sprintf("%.1f B", v.SeqWALPerID)
		}
		rounds := make([]string, len(v.RoundTPS))
		for i, t := range v.RoundTPS {
			rounds[i] = fmt.Sprintf("%.0f", t)
		}
		fmt.Fprintf(&b, "%-19s %10d %10.0f %9.1f B %12s  %s\n", v.Name, v.Rows, v.TPS, v.WALPerRow, seq, strings.Join(rounds, " "))
	}
	fmt.Fprintf(&b, "ratio snowflake_next_id/bigserial: %.3f\n", r.Ratio)
	fmt.Fprintf(&b, "WAL per ID over bigserial: %+.1f B/row\n", r.Snowflake.WALPerRow-r.Bigserial.WALPerRow)
	fmt.Fprintf(&b, "lag of the ID's time behind the row's clock_timestamp(): p50 %.2f ms, p99 %.2f ms, max %.2f ms, min %.2f ms (%d rows)\n",
		r.Lag.P50, r.Lag.P99, r.Lag.Max, r.Lag.Min, r.Lag.Rows)
	_, err := io.WriteString(w, b.String())
	return err
}

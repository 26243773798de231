package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// WriteText writes r as a short table for people.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "single-row INSERTs, %d clients, %d rounds of %.1fs per variant (alternating), %s profile, synchronous_commit=%s, PostgreSQL %s, node %d/%d\n",
		r.Clients, r.Rounds, r.RoundSeconds, r.Profile, r.SynchronousCommit, r.ServerVersion, r.Node[0], r.Node[1])
	variants := []Variant{r.Bigserial, r.Snowflake}
	if r.Native != nil {
		variants = append(variants, *r.Native)
	}
	for _, c := range r.Compared {
		variants = append(variants, c.Variant)
	}
	width := 19 // the longest name's, at least
	for _, v := range variants {
		width = max(width, len(v.Name))
	}
	fmt.Fprintf(&b, "%-*s %10s %10s %11s %12s %12s  %s\n", width, "id default", "rows", "tps", "WAL/row", "seq WAL/ID", "pkey B/row", "round tps min/median/max")
	for _, v := range variants {
		seq := "n/a"
		if v.SeqWALPerID >= 0 {
			seq = fmt.Sprintf("%.1f B", v.SeqWALPerID)
		}
		fmt.Fprintf(&b, "%-*s %10d %10.0f %9.1f B %12s %10.1f B  %.0f/%.0f/%.0f\n", width, v.Name, v.Rows, v.TPS, v.WALPerRow, seq, v.PKeyBytesPerRow,
			quantile(v.RoundTPS, 0), quantile(v.RoundTPS, 0.5), quantile(v.RoundTPS, 1))
	}
	if r.SeqWALNote != "" {
		fmt.Fprintf(&b, "seq WAL/ID n/a: %s\n", r.SeqWALNote)
	}
	ratioLine(&b, r.Snowflake.Name, r.Ratio, r.RoundRatios)
	if r.Native != nil {
		ratioLine(&b, r.Native.Name, r.NativeRatio, r.NativeRoundRatios)
	}
	for _, c := range r.Compared {
		ratioLine(&b, c.Variant.Name, c.Ratio, c.RoundRatios)
	}
	fmt.Fprintf(&b, "WAL per ID over bigserial: %+.1f B/row\n", r.Snowflake.WALPerRow-r.Bigserial.WALPerRow)
	fmt.Fprintf(&b, "lag of the ID's time behind the row's clock_timestamp(): p50 %.2f ms, p99 %.2f ms, max %.2f ms, min %.2f ms (%d rows)\n",
		r.Lag.P50, r.Lag.P99, r.Lag.Max, r.Lag.Min, r.Lag.Rows)
	if st := r.Statement; st != nil {
		fmt.Fprintf(&b, "one INSERT ... SELECT of %d rows into a fresh table, %d runs per variant (alternating), per row: bigserial %.3f us, %s %.3f us (medians), %+.3f us/row over bigserial (median of the runs' differences)\n",
			st.Rows, st.Runs, st.BigserialMedianUs, r.Snowflake.Name, st.SnowflakeMedianUs, st.ExtraMedianUs)
		if r.Native != nil {
			fmt.Fprintf(&b, "  and %s %.3f us (median), %+.3f us/row over bigserial\n", r.Native.Name, st.NativeMedianUs, st.NativeExtraMedianUs)
		}
		for _, c := range st.Compared {
			fmt.Fprintf(&b, "  and %s %.3f us (median), %+.3f us/row over bigserial\n", c.Name, c.MedianUs, c.ExtraMedianUs)
		}
		if len(st.Bytes) > 0 {
			after := "after a CHECKPOINT each"
			if !st.Checkpointed {
				after = "no CHECKPOINT allowed before them, so the WAL depends on the server's last one"
			}
			fmt.Fprintf(&b, "its table's primary key and its WAL per row at %d rows (medians; %s):\n", st.Rows, after)
			for _, x := range st.Bytes {
				fmt.Fprintf(&b, "  %-*s pkey %6.1f B  WAL %7.1f B\n", width, x.Name, x.PKeyBytesPerRow, x.WALPerRow)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ratioLine writes the line of name's ratio to bigserial, with the spread
// of its round ratios when there are several.
func ratioLine(b *strings.Builder, name string, ratio float64, rounds []float64) {
	fmt.Fprintf(b, "ratio %s/bigserial: %.3f", name, ratio)
	if len(rounds) > 1 {
		fmt.Fprintf(b, " (round by round: median %.3f, 10th-90th percentile %.3f-%.3f)",
			quantile(rounds, 0.5), quantile(rounds, 0.1), quantile(rounds, 0.9))
	}
	b.WriteString("\n")
}

// quantile returns the q-quantile (0 to 1) of xs by linear interpolation
// between the nearest ranks; 0 when xs is empty.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

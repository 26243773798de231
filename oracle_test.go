package sfgen

import (
	"fmt"
	"math"
	"math/big"
	"time"
)

// The oracles below are second implementations for the fuzz tests and the
// boundary tables. They share no code and no derived constant with the
// package: they take the layout from the README as numbers, and compute
// with math/big, multiplication, division and remainder where the package
// uses shifts and masks, so that a bug mirrored in both directions of the
// package (compose and decompose shifting the same wrong way) still fails.
//
//	id = ((t − 1288834974657) << 22) | (datacenter << 17) | (machine << 12) | sequence
//
// with t from 1288834974657 to 3487858230208 (2080-07-10T17:30:30.208Z)
// inclusive, datacenter and machine 0 to 31, sequence 0 to 4095.
const (
	readmeEpoch = 1288834974657
	readmeMaxTS = 3487858230208
	readmeMaxID = 9223372036854775807 // 2^63 - 1

	// The place values of the fields: 2^22, 2^17 and 2^12.
	tsUnit, dcUnit, machineUnit = 4194304, 131072, 4096
)

// scramble is SplitMix64's finalizer, a bijection on uint64 that spreads
// every input bit over the output. The fuzz tests check a scrambled copy
// of each input as well: the fuzzing engine changes an integer by adding
// or subtracting at most 100, which from a small seed never reaches the
// upper fields.
func scramble(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// readmeLimits are the fields' ranges, in the order Compose checks them.
var readmeLimits = [4]struct {
	f      Field
	lo, hi int64
}{
	{FieldTimestamp, readmeEpoch, readmeMaxTS},
	{FieldDatacenter, 0, 31},
	{FieldMachine, 0, 31},
	{FieldSequence, 0, 4095},
}

// oracleCompose is the README formula over the integers: ok is false, and
// bad names the first field out of range, when one is.
func oracleCompose(ts, dc, m, seq int64) (id int64, bad Field, ok bool) {
	v := [4]int64{ts, dc, m, seq}
	for i, l := range readmeLimits {
		if v[i] < l.lo || v[i] > l.hi {
			return 0, l.f, false
		}
	}
	// The fields do not overlap, so | is +; << k is × 2^k.
	n := new(big.Int).Mul(new(big.Int).Sub(big.NewInt(ts), big.NewInt(readmeEpoch)), big.NewInt(tsUnit))
	n.Add(n, new(big.Int).Mul(big.NewInt(dc), big.NewInt(dcUnit)))
	n.Add(n, new(big.Int).Mul(big.NewInt(m), big.NewInt(machineUnit)))
	n.Add(n, big.NewInt(seq))
	if n.Sign() < 0 || !n.IsInt64() {
		panic(fmt.Sprintf("oracle: compose(%d, %d, %d, %d) = %s, outside [0, 2^63)", ts, dc, m, seq, n))
	}
	return n.Int64(), 0, true
}

// oracleDecompose returns the fields of a non-negative id by division and
// remainder: timestamp = id / 2^22 + epoch, datacenter = id / 2^17 mod 32,
// machine = id / 2^12 mod 32, sequence = id mod 4096.
func oracleDecompose(id int64) Parts {
	if id < 0 {
		panic("oracle: negative id")
	}
	return Parts{
		Timestamp:  id/tsUnit + readmeEpoch,
		Datacenter: id / dcUnit % 32,
		Machine:    id / machineUnit % 32,
		Sequence:   id % machineUnit,
	}
}

// oracleMillis returns t in Unix milliseconds, rounded down and up, as
// exact integers.
func oracleMillis(t time.Time) (floor, ceil *big.Int) {
	floor = new(big.Int).Mul(big.NewInt(t.Unix()), big.NewInt(1000))
	floor.Add(floor, big.NewInt(int64(t.Nanosecond())/1_000_000))
	ceil = new(big.Int).Set(floor)
	if t.Nanosecond()%1_000_000 != 0 {
		ceil.Add(ceil, big.NewInt(1))
	}
	return floor, ceil
}

// saturate returns n, or the nearest end of the int64 range.
func saturate(n *big.Int) int64 {
	switch {
	case n.Cmp(big.NewInt(math.MaxInt64)) > 0:
		return math.MaxInt64
	case n.Cmp(big.NewInt(math.MinInt64)) < 0:
		return math.MinInt64
	}
	return n.Int64()
}

// rangeAnswer is what FirstID or LastID should return: an ID, or an error
// for FieldTimestamp with the value errMS.
type rangeAnswer struct {
	id    ID
	err   bool
	errMS int64
}

func (a rangeAnswer) String() string {
	if a.err {
		return fmt.Sprintf("a *RangeError for timestamp %d", a.errMS)
	}
	return fmt.Sprintf("%d", a.id)
}

// oracleFirstID is snowflake_first_id as its SQL reads: ms = ceil(t in
// Unix ms); ms <= epoch gives 0; ms > max is an error; else (ms - epoch)
// << 22.
func oracleFirstID(t time.Time) rangeAnswer {
	_, ms := oracleMillis(t)
	switch {
	case ms.Cmp(big.NewInt(readmeEpoch)) <= 0:
		return rangeAnswer{id: 0}
	case ms.Cmp(big.NewInt(readmeMaxTS)) > 0:
		return rangeAnswer{err: true, errMS: saturate(ms)}
	}
	id, _, _ := oracleCompose(ms.Int64(), 0, 0, 0)
	return rangeAnswer{id: ID(id)}
}

// oracleLastID is snowflake_last_id as its SQL reads: ms = floor(t in
// Unix ms); ms >= max gives the largest ID; ms < epoch is an error; else
// ((ms - epoch) << 22) | 4194303.
func oracleLastID(t time.Time) rangeAnswer {
	ms, _ := oracleMillis(t)
	switch {
	case ms.Cmp(big.NewInt(readmeMaxTS)) >= 0:
		return rangeAnswer{id: readmeMaxID}
	case ms.Cmp(big.NewInt(readmeEpoch)) < 0:
		return rangeAnswer{err: true, errMS: saturate(ms)}
	}
	id, _, _ := oracleCompose(ms.Int64(), 31, 31, 4095)
	return rangeAnswer{id: ID(id)}
}

// oracleTime is the time of a non-negative id: its millisecond.
func oracleTime(id int64) time.Time {
	return time.UnixMilli(oracleDecompose(id).Timestamp)
}

// parse outcomes of oracleParseID.
const (
	parseOK       = iota
	parseSyntax   // not an optional sign and one or more ASCII digits
	parseTooLarge // a non-negative number above 2^63-1
	parseNegative // a number below 0
)

// oracleParseID reads s as ParseID documents it, by hand: an optional '+'
// or '-', then one or more ASCII digits and nothing else. It returns the
// value (saturated at the int64 minimum for a negative number) and the
// outcome.
func oracleParseID(s string) (int64, int) {
	body, neg := s, false
	if body != "" && (body[0] == '+' || body[0] == '-') {
		neg, body = body[0] == '-', body[1:]
	}
	if body == "" {
		return 0, parseSyntax
	}
	n := new(big.Int)
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c < '0' || c > '9' {
			return 0, parseSyntax
		}
		n.Mul(n, big.NewInt(10))
		n.Add(n, big.NewInt(int64(c-'0')))
	}
	if neg {
		n.Neg(n)
	}
	switch {
	case n.Sign() < 0:
		return saturate(n), parseNegative
	case n.Cmp(big.NewInt(readmeMaxID)) > 0:
		return 0, parseTooLarge
	}
	return n.Int64(), parseOK
}

package serve

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/idkit"
)

//go:embed assets
var assets embed.FS

var pageTemplate = template.Must(template.ParseFS(assets, "assets/page.html"))

// pageView is what the page template shows.
type pageView struct {
	LayoutName string // the preset's name, or "custom"
	LayoutSpec string
	Fields     []fieldView // the compose form's inputs
	Decode     fieldView   // the decode form's input
	Mode       string      // "compose" or "decode": the form the result came from
	Result     *resultView // nil when an input is bad
	Problem    string      // why there is no result
}

// fieldView is one input of a form.
type fieldView struct {
	Name      string // the parameter
	Label     string
	Value     string // as given, or as the result has it
	Hint      string // its range
	Error     string // the command line's message for the value given, if bad
	InputMode string // "numeric", or "text" for the timestamp, which takes a time too
}

// resultView is one ID, its segments and its bits.
type resultView struct {
	ID       string
	Base32   string // the ID's string forms
	Base58   string
	Time     string // UTC
	Segments []segmentView
	Bits     []bitView // 64, bit 63 first
	BarLabel string    // the bar's text alternative
	API      string    // the API call that returns the same ID
	Command  string    // the sfgen command that prints the same ID
}

// segmentView is one segment of an ID's bits.
type segmentView struct {
	Name    string // "sign", "timestamp", ...
	Short   string // a label that fits a narrow segment: "ts", "dc", ...
	Class   string // "seg-timestamp", ...
	Span    int    // its width in bits
	High    int    // its most significant bit's number
	Low     int    // its least significant bit's number
	Bits    string
	Value   int64
	Meaning string
}

// bitView is one bit of the bar.
type bitView struct {
	Bit   string // "0" or "1"
	Class string // the segment's class
	First bool   // the segment's first (most significant) bit
	Title string // "bit 62: timestamp"
}

var shortNames = map[string]string{"sign": "", "timestamp": "timestamp", "datacenter": "dc", "machine": "m", "sequence": "seq"}

func (s *server) page(w http.ResponseWriter, r *http.Request) {
	v, status := s.view(r.URL.Query())
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// view is the page for query q: a decoded ID when q has "id", else a
// composed one (now, 0, 0, 0 for an empty query). Values are trimmed of
// spaces, which a pasted ID may carry; a timestamp may also be an RFC
// 3339 time. The status is 400 when an input is bad.
func (s *server) view(q url.Values) (pageView, int) {
	l := s.layout
	v := pageView{LayoutName: layoutName(l), LayoutSpec: l.String(), Mode: "compose"}
	for _, f := range composeFields {
		fv := fieldView{Name: f.String(), Label: f.String(), InputMode: "numeric",
			Hint: fmt.Sprintf("%d to %d", l.Min(f), l.Max(f)), Value: strings.TrimSpace(q.Get(f.String()))}
		switch f {
		case snowflake.FieldTimestamp:
			fv.Label, fv.InputMode = "timestamp (Unix ms or RFC 3339)", "text"
			fv.Hint = fmt.Sprintf("%d to %d, or an RFC 3339 time from %s to %s; blank means now",
				l.Min(f), l.Max(f), l.MinTime().Format(idkit.TimeFormat), l.MaxTime().Format(idkit.TimeFormat))
		case snowflake.FieldMachine:
			fv.Label = "machine (worker)"
			fv.Hint += "; blank means 0"
		default:
			fv.Hint += "; blank means 0"
		}
		v.Fields = append(v.Fields, fv)
	}
	v.Decode = fieldView{Name: "id", Label: "Snowflake ID", InputMode: "numeric",
		Hint: "a decimal integer, 0 to " + maxID + "; or base32 (13 characters) or base58", Value: strings.TrimSpace(q.Get("id"))}

	var id snowflake.ID
	var err error
	if q.Has("id") {
		v.Mode = "decode"
		id, err = parseID(v.Decode.Value, "")
	} else {
		var c composition
		for i := range composeFields {
			c.texts[i] = v.Fields[i].Value
		}
		id, err = compose(l, c, s.now())
	}
	if err != nil {
		var ie *InputError
		ok := errors.As(err, &ie)
		switch {
		case !ok:
			v.Problem = err.Error() + " See the message next to the field."
		case ie.Field == "id":
			v.Decode.Error = ie.Message
			v.Problem = "No ID: the ID is not valid. See the message next to the field."
		default:
			bad := fieldErrors{ie}
			errors.As(err, &bad)
			var names []string
			for _, ie := range bad {
				for i := range v.Fields {
					if v.Fields[i].Name == ie.Field {
						v.Fields[i].Error = ie.Message
					}
				}
				names = append(names, ie.Field)
			}
			if len(names) == 1 {
				v.Problem = "No ID: the " + names[0] + " is not valid. See the message next to the field."
			} else {
				v.Problem = "No ID: the " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " are not valid. See the messages next to the fields."
			}
		}
		return v, http.StatusBadRequest
	}
	p, err := l.Decompose(id)
	if err != nil {
		v.Decode.Error, v.Problem = err.Error(), err.Error()+" See the message next to the field."
		return v, http.StatusBadRequest
	}
	if v.Mode == "decode" {
		for i, n := range []int64{p.Timestamp, p.Datacenter, p.Machine, p.Sequence} {
			v.Fields[i].Value = strconv.FormatInt(n, 10)
		}
	} else {
		v.Decode.Value = id.String()
	}
	v.Result = result(l, id, p, v.Mode)
	return v, http.StatusOK
}

// result describes id, whose parts in layout l are p.
func result(l snowflake.Layout, id snowflake.ID, p snowflake.Parts, mode string) *resultView {
	rv := &resultView{ID: id.String(), Base32: id.Base32(), Base58: id.Base58(), Time: p.Time().Format(idkit.TimeFormat)}
	bit := 63
	var labels []string
	for _, seg := range idkit.Segments(l, id) {
		sv := segmentView{Name: seg.Name, Short: shortNames[seg.Name], Class: "seg-" + seg.Name,
			Span: len(seg.Bits), High: bit, Low: bit - len(seg.Bits) + 1, Bits: seg.Bits, Value: seg.Value}
		switch seg.Name {
		case "sign":
			sv.Meaning = "always 0, so the ID is a positive bigint"
		case "timestamp":
			sv.Meaning = fmt.Sprintf("Unix milliseconds: %s UTC, %d ms after the epoch %s",
				rv.Time, seg.Value-l.Epoch(), l.MinTime().Format(idkit.TimeFormat))
		case "datacenter":
			sv.Meaning = fmt.Sprintf("the datacenter, 0 to %d", l.Max(snowflake.FieldDatacenter))
		case "machine":
			sv.Meaning = fmt.Sprintf("the machine (worker), 0 to %d", l.Max(snowflake.FieldMachine))
		case "sequence":
			sv.Meaning = fmt.Sprintf("the sequence within its millisecond, 0 to %d", l.Max(snowflake.FieldSequence))
		}
		for i, b := range seg.Bits {
			rv.Bits = append(rv.Bits, bitView{Bit: string(b), Class: sv.Class, First: i == 0,
				Title: fmt.Sprintf("bit %d: %s", bit-i, seg.Name)})
		}
		labels = append(labels, fmt.Sprintf("%d %s", sv.Span, seg.Name))
		bit -= len(seg.Bits)
		rv.Segments = append(rv.Segments, sv)
	}
	rv.BarLabel = "64 bits: " + strings.Join(labels, ", ")
	layoutFlag := ""
	if name := layoutName(l); name != "twitter" {
		layoutFlag = " --layout " + name
		if name == "custom" {
			layoutFlag = " --layout '" + l.String() + "'"
		}
	}
	if mode == "decode" {
		rv.API = "/api/decompose?id=" + rv.ID
		rv.Command = "sfgen decompose" + layoutFlag + " " + rv.ID
	} else {
		rv.API = fmt.Sprintf("/api/compose?timestamp=%d&datacenter=%d&machine=%d&sequence=%d", p.Timestamp, p.Datacenter, p.Machine, p.Sequence)
		rv.Command = fmt.Sprintf("sfgen compose%s --timestamp %d --datacenter %d --machine %d --sequence %d", layoutFlag, p.Timestamp, p.Datacenter, p.Machine, p.Sequence)
	}
	return rv
}

// layoutName is a preset's name for l, or "custom".
func layoutName(l snowflake.Layout) string {
	for _, name := range idkit.PresetNames() {
		if p, _ := idkit.LayoutByName(name); p == l {
			return name
		}
	}
	return "custom"
}

package prometheus

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/schema"
)

// series is one record's series: its label values (in the order of the
// sink's sorted label names) and its value. skip, when set, says why the
// record has no series (its value is not a finite number).
type series struct {
	values []string
	value  float64
	skip   string
}

// Prepare turns a record into the entry the target holds at its key: the
// entry's Value is the series as a line of the exposition format without
// the node label (`name{a="x"} 1`), or a line saying why it is skipped;
// its Data encodes the series for Update. Labels that do not evaluate, or
// that are sensitive, fail the record.
func (s *Sink) Prepare(r node.Record) (node.Entry, error) {
	ctx := s.ctx.NewChild()
	ctx.Variables = map[string]cty.Value{"record": cty.ObjectVal(map[string]cty.Value{
		"key": cty.StringVal(r.Key), "value": node.Unpack(r.Value)})}
	var sr series
	sr.values = make([]string, len(s.labels))
	for i, l := range s.labels {
		v, err := s.labelValue(l, ctx)
		if err != nil {
			return node.Entry{}, err
		}
		sr.values[i] = v
	}
	var err error
	if sr.value, sr.skip, err = s.number(ctx); err != nil {
		return node.Entry{}, err
	}
	return s.entry(r.Key, sr), nil
}

// labelValue evaluates one label's value as a string.
func (s *Sink) labelValue(l labelExpr, ctx *hcl.EvalContext) (string, error) {
	v, diags := l.expr.Value(ctx)
	if diags.HasErrors() {
		return "", fmt.Errorf("label %s: %s", l.name, diags.Error())
	}
	if v.IsMarked() || schema.IsSensitive(v) {
		return "", fmt.Errorf("label %s is computed from a sensitive value; a series is shown to every scraper, so the record is refused", l.name)
	}
	if v.IsNull() {
		return "", nil
	}
	sv, err := convert.Convert(v, cty.String)
	if err != nil || !sv.IsKnown() || sv.IsNull() {
		return "", fmt.Errorf("label %s is %s, not a string, number or bool", l.name, v.Type().FriendlyName())
	}
	if !utf8.ValidString(sv.AsString()) {
		return "", fmt.Errorf("label %s is not valid UTF-8", l.name)
	}
	return sv.AsString(), nil
}

// number evaluates the value; skip says why it is not a finite number.
// A value computed from a secret fails the record.
func (s *Sink) number(ctx *hcl.EvalContext) (f float64, skip string, err error) {
	f, skip = s.evalNumber(ctx)
	if skip == skipSensitive {
		return f, "", errors.New("value is computed from a sensitive value; a series is shown to every scraper, so the record is refused")
	}
	return f, skip, nil
}

const skipSensitive = "sensitive"

func (s *Sink) evalNumber(ctx *hcl.EvalContext) (f float64, skip string) {
	v, diags := s.value.Value(ctx)
	if diags.HasErrors() {
		return math.NaN(), "value does not evaluate: " + diags.Error()
	}
	if schema.IsSensitive(v) {
		return math.NaN(), skipSensitive
	}
	switch {
	case v.IsNull():
		return math.NaN(), "value is null"
	case !v.IsKnown():
		return math.NaN(), "value is unknown"
	case v.Type() == cty.Bool:
		if v.True() {
			return 1, ""
		}
		return 0, ""
	}
	n, err := convert.Convert(v, cty.Number)
	if err != nil || n.IsNull() {
		return math.NaN(), fmt.Sprintf("value is %s, not a number", describe(v))
	}
	f, _ = n.AsBigFloat().Float64()
	switch {
	case math.IsInf(f, 0) || math.IsNaN(f):
		return f, "value " + formatValue(f) + " is not a finite number"
	case s.fam.typ == "counter" && f < 0:
		return f, "a counter's value cannot be negative: " + formatValue(f)
	}
	return f, ""
}

func describe(v cty.Value) string {
	if v.Type() == cty.String {
		return strconv.Quote(v.AsString())
	}
	return v.Type().FriendlyName()
}

// entry builds the entry of key k holding sr: the one place an entry is
// made, so Prepare and Actual give equal entries.
func (s *Sink) entry(k node.Key, sr series) node.Entry {
	line := s.line(sr)
	if sr.skip != "" {
		line = "skipped (" + sr.skip + "): " + line
	}
	return node.Entry{Key: k, Value: cty.StringVal(line), Data: encode(sr)}
}

// line is the series in the text exposition format, without the node
// label: name{label="value",...} value.
func (s *Sink) line(sr series) string { return s.format(sr, "") }

// format writes the series in the text exposition format, labels sorted
// by name; with address set, the node label too, as a scrape shows it.
func (s *Sink) format(sr series, address string) string {
	type pair struct{ name, value string }
	pairs := make([]pair, 0, len(s.labels)+1)
	for i, l := range s.labels {
		pairs = append(pairs, pair{l.name, sr.values[i]})
	}
	if address != "" {
		at, _ := slices.BinarySearchFunc(pairs, "node", func(p pair, n string) int { return strings.Compare(p.name, n) })
		pairs = slices.Insert(pairs, at, pair{"node", address})
	}
	var b strings.Builder
	b.WriteString(s.fam.name)
	if len(pairs) > 0 {
		b.WriteByte('{')
		for i, p := range pairs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(p.name)
			b.WriteString(`="`)
			b.WriteString(escapeLabel(p.value))
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(formatValue(sr.value))
	return b.String()
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

func escapeLabel(v string) string { return labelEscaper.Replace(v) }

// formatValue writes a value as the text exposition format does.
func formatValue(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// encode lays sr out as the entry's Data: a skipped flag, the value's
// bits, then each label value with its length. Two entries are the same
// series with the same value exactly when their Data are equal.
func encode(sr series) []byte {
	n := 9
	for _, v := range sr.values {
		n += binary.MaxVarintLen32 + len(v)
	}
	b := make([]byte, 0, n)
	if sr.skip != "" {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(sr.value))
	for _, v := range sr.values {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

var errBadData = errors.New("malformed series data")

// decode reads Data that encode made for labels label values; skipped
// entries decode with skip set to "skipped".
func decode(b []byte, labels int) (series, error) {
	if len(b) < 9 {
		return series{}, errBadData
	}
	sr := series{value: math.Float64frombits(binary.BigEndian.Uint64(b[1:9])), values: make([]string, labels)}
	if b[0] == 1 {
		sr.skip = "skipped"
	}
	b = b[9:]
	for i := range labels {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return series{}, errBadData
		}
		sr.values[i] = string(b[w : w+int(n)])
		b = b[w+int(n):]
	}
	if len(b) != 0 {
		return series{}, errBadData
	}
	return sr, nil
}

// id is the series' identity within the family: its label values as
// encoded, without the value.
func id(data []byte) string { return string(data[9:]) }

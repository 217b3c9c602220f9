package log

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/pipeline/pipeline/engine/node"
	"github.com/pipeline/pipeline/engine/node/nodetest"
)

var up = &node.Upstream{Address: "source.static.x", Type: node.Records}

func TestTargetSuite(t *testing.T) {
	recs := []node.Record{{Key: "a", Value: cty.StringVal("1")}, {Key: "b", Value: cty.EmptyObjectVal}, {Key: "c", Value: cty.NumberIntVal(3)}}
	nodetest.RunTargetSuite(t, func(t *testing.T) node.Target {
		s := nodetest.MustBuild(t, Spec(), "input = source.static.x", up).Sink.(*Sink)
		s.Out = &bytes.Buffer{}
		tg, err := s.Open(context.Background(), node.Env{}, node.ModeRun)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}, recs)
}

func TestFormats(t *testing.T) {
	for format, want := range map[string][]string{
		"text": {`+ 10.0.0.1 {"pod":"a"}`, `- 10.0.0.1`},
		"json": {`"op":"upsert","time":`, `"key":"10.0.0.1","op":"delete"`},
	} {
		s := nodetest.MustBuild(t, Spec(), "input = source.static.x\nformat = \""+format+"\"", up).Sink.(*Sink)
		var buf bytes.Buffer
		s.Out = &buf
		tg, err := s.Open(context.Background(), node.Env{}, node.ModeRun)
		if err != nil {
			t.Fatal(err)
		}
		e, _ := tg.Prepare(node.Record{Key: "10.0.0.1", Value: cty.ObjectVal(map[string]cty.Value{"pod": cty.StringVal("a")})})
		tg.Update(context.Background(), []node.Entry{e})
		tg.Delete(context.Background(), []node.Entry{e})
		for _, w := range want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("%s: output %q lacks %q", format, buf.String(), w)
			}
		}
	}
}

// An open error names the operation and path once.
func TestOpenErrorNamedOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "out.log")
	s := nodetest.MustBuild(t, Spec(), fmt.Sprintf("input = source.static.x\npath = %q", path), up).Sink.(*Sink)
	env, _ := nodetest.Env(t, nil)
	_, err := s.Open(context.Background(), env, node.ModeRun)
	if err == nil || strings.Count(err.Error(), "open") != 1 || strings.Count(err.Error(), path) != 1 {
		t.Fatalf("open error %v", err)
	}
}

// Numbers are printed exactly, in both formats: a float64 would print
// 2^64-1 as 18446744073709552000 and drop the tail of a long fraction.
func TestNumbersExact(t *testing.T) {
	v := cty.ObjectVal(map[string]cty.Value{
		"big":  cty.MustParseNumberVal("18446744073709551615"),
		"fine": cty.MustParseNumberVal("0.10000000000000000001"),
		"half": cty.MustParseNumberVal("0.5"),
	})
	for _, format := range []string{"text", "json"} {
		s := nodetest.MustBuild(t, Spec(), "input = source.static.x\nformat = \""+format+"\"", up).Sink.(*Sink)
		var buf bytes.Buffer
		s.Out = &buf
		tg, err := s.Open(context.Background(), node.Env{}, node.ModeRun)
		if err != nil {
			t.Fatal(err)
		}
		e, _ := tg.Prepare(node.Record{Key: "k", Value: v})
		tg.Update(context.Background(), []node.Entry{e})
		for _, w := range []string{`"big":18446744073709551615`, `"fine":0.10000000000000000001`, `"half":0.5`} {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("%s: output %q lacks %q", format, buf.String(), w)
			}
		}
	}
}

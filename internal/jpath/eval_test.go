package jpath

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/util/jsonpath"
)

// TestMapOrder: `*` and `..` visit a map's keys in sorted order, so a
// template gives one answer for one value however often it runs (client-go's
// walk follows Go's random map order).
func TestMapOrder(t *testing.T) {
	labels := map[string]any{}
	var sorted []any
	for i := range 30 {
		labels[fmt.Sprintf("k%02d", i)] = fmt.Sprint("v", i)
		sorted = append(sorted, fmt.Sprint("v", i))
	}
	data := map[string]any{"metadata": map[string]any{"labels": labels}}
	for _, src := range []string{"{.metadata.labels.*}", "{.metadata..labels.*}", "{.metadata.*.*}"} {
		for _, strict := range []bool{false, true} {
			tmpl, err := Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			if strict {
				tmpl = tmpl.Strict()
			}
			for range 100 {
				got, err := tmpl.FindResults(data)
				if err != nil || len(got) != 1 || !slices.Equal(got[0], sorted) {
					t.Fatalf("%s (strict %v) = %v, %v; want %v", src, strict, got, err, sorted)
				}
			}
		}
	}
}

// TestStrict: a strict template's missing field is an error, as with
// client-go's AllowMissingKeys(false); an unstrict one finds nothing.
func TestStrict(t *testing.T) {
	data := map[string]any{"a": map[string]any{"b": nil}, "l": []any{map[string]any{"x": "1"}, map[string]any{}}}
	for _, tc := range []struct {
		src       string
		want      string // the values found, as JSON
		strictErr string // the strict template's error, if any
	}{
		{"{.a.c}", `[]`, "c is not found"},
		{"{.a.b}", `[null]`, ""},
		{"{.a.b.c}", `[]`, "c is not found"},
		{"{.z.y}", `[]`, "z is not found"},
		{"{.l[*].x}", `["1"]`, ""},
		{"{.l[*].y}", `[]`, "y is not found"},
		{`{.l[?(@.x=="1")].x}`, `["1"]`, "x is not found"},
		{"{.l[?(@.x)].x}", `["1"]`, ""},
	} {
		tmpl, err := Parse(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tmpl.FindResults(data)
		if err != nil || flatJSON(got) != tc.want {
			t.Errorf("%s = %s, %v; want %s", tc.src, flatJSON(got), err, tc.want)
		}
		got, err = tmpl.Strict().FindResults(data)
		switch {
		case tc.strictErr == "" && (err != nil || flatJSON(got) != tc.want):
			t.Errorf("strict %s = %s, %v; want %s", tc.src, flatJSON(got), err, tc.want)
		case tc.strictErr != "" && (err == nil || err.Error() != tc.strictErr):
			t.Errorf("strict %s = %s, %v; want error %q", tc.src, flatJSON(got), err, tc.strictErr)
		}
	}
}

// TestSameAsClientGo: on random values and templates the evaluation gives
// what client-go's gives (kubectl's rules), with missing keys allowed and
// not: the same values in the same order, or the same multiset where the
// template walks a map with `*` or `..` (client-go's order there is
// random), and an error where client-go gives one.
func TestSameAsClientGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	names := []string{"a", "b", "c"}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := rng.IntN(8); {
		case depth > 3 || k == 0:
			return fmt.Sprint("s", rng.IntN(3))
		case k == 1:
			return int64(rng.IntN(4))
		case k == 2:
			return nil
		case k == 3:
			return rng.IntN(2) == 0
		case k == 4:
			// Not empty: client-go's walk of [...] ends at an empty list,
			// leaving out the lists after it; ours goes on.
			l := []any{gen(depth + 1)}
			for range rng.IntN(3) {
				l = append(l, gen(depth+1))
			}
			return l
		default:
			m := map[string]any{}
			for range rng.IntN(4) {
				m[names[rng.IntN(len(names))]] = gen(depth + 1)
			}
			return m
		}
	}
	steps := []func() string{
		func() string { return "." + names[rng.IntN(len(names))] },
		func() string { return fmt.Sprintf("[%d]", rng.IntN(3)-1) },
		func() string { return "[*]" },
		func() string { return "[0:2]" },
		func() string { return ".*" },
		func() string { return ".." + names[rng.IntN(len(names))] },
		func() string { return "[?(@." + names[rng.IntN(len(names))] + ")]" },
		func() string { return fmt.Sprintf(`[?(@.%s=="s%d")]`, names[rng.IntN(len(names))], rng.IntN(3)) },
		func() string { return fmt.Sprintf(`[?(@.%s>%d)]`, names[rng.IntN(len(names))], rng.IntN(3)) },
		func() string { return "['a','b']" },
	}
	path := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(3) {
			b.WriteString(steps[rng.IntN(len(steps))]())
		}
		return b.String()
	}
	compared := map[bool]int{}
	for i := range 20000 {
		data := gen(0)
		strict := i%2 == 1
		var src string
		switch rng.IntN(4) {
		case 0:
			src = "{" + path() + "}x{" + path() + "}"
		case 1:
			head := path()
			if found, err := clientGoEval("{"+head+"}", data, strict); err != nil || found == "[]" {
				// client-go walks the body of a range that found nothing
				// on no value, which fails or panics; ours skips it.
				continue
			}
			src = "{range " + head + "}[{" + path() + "}]{end}"
		default:
			src = "{" + path() + "}"
		}
		if strings.HasPrefix(src, "{..") || strings.Contains(src, "{range ..") {
			continue // client-go's parser reads "{.." as a field after "."
		}
		tmpl, err := Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if strict {
			tmpl = tmpl.Strict()
		}
		got, gerr := answer(tmpl, data)
		want, werr := clientGoEval(src, data, strict)
		if errors.Is(werr, errClientGoPanicked) {
			continue
		}
		if (gerr != nil) != (werr != nil) {
			t.Fatalf("case %d: %s (strict %v) of %#v: got %s (%v), client-go %s (%v)", i, src, strict, data, got, gerr, want, werr)
		}
		if gerr != nil {
			continue
		}
		compared[strict]++
		g, w := got, want
		if strings.Contains(src, "*") || strings.Contains(src, "..") {
			g, w = sortedRunes(g), sortedRunes(w)
		}
		if g != w {
			t.Fatalf("case %d: %s (strict %v) of %#v: got %s, client-go %s", i, src, strict, data, got, want)
		}
	}
	if compared[false] < 1500 || compared[true] < 400 {
		t.Fatalf("only %v of 20000 cases evaluated without an error", compared)
	}
}

// answer is tmpl's answer for data: the printed text for a template that
// prints, else the values found as JSON.
func answer(tmpl *Template, data any) (string, error) {
	results, err := tmpl.FindResults(data)
	if err != nil {
		return "", err
	}
	if tmpl.Prints() {
		var buf bytes.Buffer
		for _, set := range results {
			if err := PrintResults(&buf, set); err != nil {
				return "", err
			}
		}
		return buf.String(), nil
	}
	return flatJSON(results), nil
}

func flatJSON(results [][]any) string {
	vals := []any{}
	for _, set := range results {
		vals = append(vals, set...)
	}
	b, err := json.Marshal(vals)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// errClientGoPanicked: client-go's walk panics on the body of a range
// that found nothing when the body indexes a list; ours skips that body.
var errClientGoPanicked = errors.New("client-go panicked")

// clientGoEval is answer as client-go's JSONPath gives it.
func clientGoEval(src string, data any, strict bool) (s string, err error) {
	defer func() {
		if recover() != nil {
			s, err = "", errClientGoPanicked
		}
	}()
	j := jsonpath.New("jsonpath").AllowMissingKeys(!strict)
	if err := j.Parse(src); err != nil {
		return "", err
	}
	tmpl, err := Parse(src)
	if err != nil {
		return "", err
	}
	if tmpl.Prints() {
		var buf bytes.Buffer
		if err := j.Execute(&buf, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	results, err := j.FindResults(data)
	if err != nil {
		return "", err
	}
	var sets [][]any
	for _, set := range results {
		var vals []any
		for _, r := range set {
			for (r.Kind() == reflect.Interface || r.Kind() == reflect.Pointer) && !r.IsNil() {
				r = r.Elem()
			}
			if !r.IsValid() || (r.Kind() == reflect.Interface || r.Kind() == reflect.Pointer) && r.IsNil() {
				vals = append(vals, nil)
				continue
			}
			vals = append(vals, r.Interface())
		}
		sets = append(sets, vals)
	}
	return flatJSON(sets), nil
}

func sortedRunes(s string) string {
	r := []rune(s)
	slices.Sort(r)
	return string(r)
}

// TestExactNumbers: a number the kubernetes source keeps as its exact text
// (json.Number) prints as that text and compares in a filter as a number.
func TestExactNumbers(t *testing.T) {
	data := map[string]any{"items": []any{
		map[string]any{"name": "a", "ratio": json.Number("0.25")},
		map[string]any{"name": "b", "ratio": json.Number("0.75")},
		map[string]any{"name": "c", "ratio": json.Number("18446744073709551615")},
	}}
	for src, want := range map[string]string{
		`{.items[?(@.ratio > 0.5)].name}`: "b c",
		`{.items[?(@.ratio < 1.0)].name}`: "a b",
		`{.items[2].ratio}`:               "18446744073709551615",
		`{.items[0]}`:                     `{"name":"a","ratio":0.25}`,
	} {
		tmpl, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		res, err := tmpl.FindResults(data)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		var b bytes.Buffer
		for i, r := range res {
			if i > 0 {
				b.WriteByte(' ')
			}
			if err := PrintResults(&b, r); err != nil {
				t.Fatal(err)
			}
		}
		if b.String() != want {
			t.Errorf("%s = %q, want %q", src, b.String(), want)
		}
	}
}

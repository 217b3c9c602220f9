package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMeasured(t *testing.T) {
	for _, c := range []struct {
		in            []float64
		med, min, max float64
	}{
		{[]float64{3, 1, 2}, 2, 1, 3},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
		{[]float64{7}, 7, 7, 7},
	} {
		r := measured("x", "x", "ms", c.in)
		if got, want := [3]float64{r.Median, r.Min, r.Max}, [3]float64{c.med, c.min, c.max}; got != want {
			t.Errorf("measured(%v) = %v, want %v", c.in, got, want)
		}
	}
	if r := measured("x", "x", "ms", nil); r.Skipped == "" {
		t.Error("a row without samples is not marked skipped")
	}
}

func TestAgainst(t *testing.T) {
	floor := measured("F", "floor", "ms", []float64{100, 110, 90})
	r := measured("P", "p", "ms", []float64{150, 140, 160}).against(floor, "<= 2x F")
	if diff := cmp.Diff(Row{ID: "P", Name: "p", Unit: "ms", Samples: []float64{150, 140, 160}, Median: 150, Min: 140, Max: 160,
		Ref: "F", RefValue: 100, Ratio: 1.5, Goal: "<= 2x F"}, r); diff != "" {
		t.Error(diff)
	}
	if r := measured("P", "p", "ms", []float64{1}).against(skipped("F", "f", "needs root"), ""); r.Ratio != 0 {
		t.Errorf("ratio against a skipped row: %v", r.Ratio)
	}
}

func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 200; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if got := percentiles(ds); got != [2]float64{100, 198} {
		t.Errorf("percentiles(1..200 ms) = %v, want [100 198]", got)
	}
}

func TestPrintShowsEveryRow(t *testing.T) {
	rows := []Row{measured("P1a", "floor", "ms", []float64{1, 2, 3}), skipped("P5", "reload", "not landed")}
	for _, f := range []func(*strings.Builder){
		func(b *strings.Builder) { Print(b, rows) },
		func(b *strings.Builder) { Markdown(b, rows) },
	} {
		var b strings.Builder
		f(&b)
		for _, want := range []string{"P1a", "2.00 ms", "1.00..3.00", "P5", "not landed"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("table lacks %q:\n%s", want, b.String())
			}
		}
	}
}

func TestSamplesIncludeLast(t *testing.T) {
	s := samples(10000, 8)
	if s[0] != podIP(9999) || len(s) != 8 {
		t.Errorf("samples(10000, 8) = %v", s)
	}
}

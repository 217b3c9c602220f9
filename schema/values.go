package schema

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agext/levenshtein"
)

// ParseDuration parses a Go duration string and refuses negative values.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration; write a number with a unit such as \"100ms\", \"30s\" or \"5m\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative; durations must be zero or more", s)
	}
	return d, nil
}

var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// ParseSize parses a byte size such as "100MiB", "1.5GB" or "4096".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a size; write a number with a unit such as \"100MiB\", \"10MB\" or \"4096B\"", s)
	}
	if f < 0 {
		return 0, errors.New("sizes must be zero or more")
	}
	n := f * mult
	if n > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(n), nil
}

// DidYouMean returns the candidate closest to given, or "" when none is close.
func DidYouMean(given string, candidates []string) string {
	best, bestDist := "", 1<<30
	for _, c := range candidates {
		d := levenshtein.Distance(given, c, nil)
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist <= 2 || (bestDist <= len(given)/3 && bestDist < len(given)) {
		return best
	}
	return ""
}

package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// goBench runs one Go benchmark of this module (go test -bench) count
// times and returns each metric's values, one per count: "ns/op" and
// every b.ReportMetric unit. The benchmark's own floors are measured in
// its process, so ratios between its metrics share conditions.
func goBench(ctx context.Context, pkg, pattern, benchtime string, count int, tags ...string) (map[string][]float64, error) {
	args := []string{"test", "-run", "^$", "-bench", pattern, "-benchtime", benchtime, "-count", fmt.Sprint(count)}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, tail(out.String(), 800))
	}
	metrics := map[string][]float64{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			if len(f) > 0 && f[0] == "---" && len(f) > 1 && f[1] == "SKIP:" {
				return nil, fmt.Errorf("benchmark skipped: %s", tail(out.String(), 300))
			}
			continue
		}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				metrics[f[i+1]] = append(metrics[f[i+1]], v)
			}
		}
	}
	if len(metrics) == 0 {
		return nil, fmt.Errorf("go %s: no result: %s", strings.Join(args, " "), tail(out.String(), 800))
	}
	return metrics, nil
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}

// scaled divides every value by div (ns -> ms: 1e6).
func scaled(vs []float64, div float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = v / div
	}
	return out
}

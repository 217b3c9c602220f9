package kubeapitest

import (
	"strconv"
	"strings"
)

func itoa(i int) string { return strconv.Itoa(i) }

// zombie reports whether a /proc/PID/stat line shows state Z or X.
func zombie(stat string) bool {
	i := strings.LastIndex(stat, ")")
	return i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

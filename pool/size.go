package pool

import "strconv"

// Byte units used by HumanReadableSize (binary multiples, as DataFusion).
const (
	KB int64 = 1 << 10
	MB int64 = 1 << 20
	GB int64 = 1 << 30
	TB int64 = 1 << 40
)

// HumanReadableSize formats n bytes as DataFusion's human_readable_size does:
// one decimal place, and the next unit only from twice that unit upwards, so
// 2000 is "2000.0 B", 2048 is "2.0 KB" and 1 GiB is "1024.0 MB".
func HumanReadableSize(n int64) string {
	var v float64
	var unit string
	switch a := magnitude(n); {
	case a >= 2*uint64(TB):
		v, unit = float64(n)/float64(TB), "TB"
	case a >= 2*uint64(GB):
		v, unit = float64(n)/float64(GB), "GB"
	case a >= 2*uint64(MB):
		v, unit = float64(n)/float64(MB), "MB"
	case a >= 2*uint64(KB):
		v, unit = float64(n)/float64(KB), "KB"
	default:
		v, unit = float64(n), "B"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + unit
}

// magnitude is |n| as a uint64, which (unlike an int64) also holds
// |math.MinInt64|. Negative sizes occur only in a pool whose count went
// below zero; they are formatted like positive ones, with a minus sign.
func magnitude(n int64) uint64 {
	if n < 0 {
		return -uint64(n)
	}
	return uint64(n)
}

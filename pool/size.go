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
	switch a := abs(n); {
	case a >= 2*TB:
		v, unit = float64(n)/float64(TB), "TB"
	case a >= 2*GB:
		v, unit = float64(n)/float64(GB), "GB"
	case a >= 2*MB:
		v, unit = float64(n)/float64(MB), "MB"
	case a >= 2*KB:
		v, unit = float64(n)/float64(KB), "KB"
	default:
		v, unit = float64(n), "B"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + unit
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

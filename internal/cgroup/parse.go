package cgroup

// Byte-slice parsing of the kernel's small text files, with no maps, no
// string conversions and no allocations: a sample is taken tens of times a
// second when memory is tight.

// nextLine splits b at its first newline.
func nextLine(b []byte) (line, rest []byte) { return cutByte(b, '\n') }

// cutByte splits b at the first c, which neither part keeps; rest is empty
// when there is none.
func cutByte(b []byte, c byte) (before, rest []byte) {
	for i, x := range b {
		if x == c {
			return b[:i], b[i+1:]
		}
	}
	return b, nil
}

// cutPrefix returns b without prefix, and whether b began with it.
func cutPrefix(b []byte, prefix string) ([]byte, bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return b, false
	}
	return b[len(prefix):], true
}

// keyValue splits a "key value" line of a flat-keyed file, the value a
// non-negative decimal integer; ok is false for any other line.
func keyValue(line []byte) (key []byte, n int64, ok bool) {
	key, v := cutByte(line, ' ')
	if len(key) == 0 {
		return nil, 0, false
	}
	n, ok = parseInt(trimSpace(v))
	return key, n, ok
}

// trimSpace drops leading and trailing spaces, tabs and newlines.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// parseInt parses a non-negative decimal int64: digits only, no sign, no
// overflow (leading zeros are digits too: the loop's bound, not the length,
// refuses what does not fit).
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// parseDecimal parses a non-negative decimal fraction as PSI prints it
// ("12.34"): digits, and optionally a point and more digits.
func parseDecimal(b []byte) (float64, bool) {
	whole, frac := cutByte(b, '.')
	w, ok := parseInt(whole)
	if !ok {
		return 0, false
	}
	if len(frac) == 0 {
		return float64(w), len(b) == len(whole) // "12." is malformed
	}
	if len(frac) > 18 {
		frac = frac[:18]
	}
	f, ok := parseInt(frac)
	if !ok {
		return 0, false
	}
	scale := 1.0
	for range frac {
		scale *= 10
	}
	return float64(w) + float64(f)/scale, true
}

package main

import (
	"fmt"
	"image/color"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPartColorsMatchTheNativeMemoryPages reads the Java copy of the
// colour table (LedgerColors, which the Native Memory page draws with) and
// checks this one against it: the parts in order with their colours, the
// colours of netty's pools and of unknown parts, other's and unexplained's.
func TestPartColorsMatchTheNativeMemoryPages(t *testing.T) {
	src, err := os.ReadFile("../../spark/src/main/java/org/nativepool/spark/ui/LedgerColors.java")
	require.NoError(t, err)
	java := string(src)
	table := java[strings.Index(java, "table("):strings.Index(java, "NETTY_COLORS =")]
	var javaParts, goParts []string
	for _, m := range regexp.MustCompile(`"([A-Za-z.]+)", "(#[0-9a-f]{6})"`).FindAllStringSubmatch(table, -1) {
		javaParts = append(javaParts, m[1]+" "+m[2])
	}
	for _, p := range partColors {
		goParts = append(goParts, p.part+" "+p.color)
	}
	assert.Equal(t, javaParts, goParts)
	list := func(name string) string {
		m := regexp.MustCompile(name + ` = List\.of\(([^)]*)\);`).FindStringSubmatch(java)
		require.NotNil(t, m, name)
		return m[1]
	}
	assert.Equal(t, `"`+strings.Join(nettyColors, `", "`)+`"`, list("NETTY_COLORS"))
	assert.Equal(t, `"`+strings.Join(unknownColors, `", "`)+`"`, list("UNKNOWN_COLORS"))
	assert.Contains(t, java, `OTHER_COLOR = "`+otherColor+`";`)
	assert.Contains(t, java, `UNEXPLAINED_COLOR = "`+unexplainedColor+`";`)
}

// TestStackBandsFillEachPartWithItsColourInTheLedgersOrder: whatever the
// CSV's column order, the bands stack in the ledger's order (netty's pool
// after the JVM's parts, other then unexplained on top) and each part has
// the colour the Native Memory page gives it; a band of small parts of one
// owner takes its first part's colour.
func TestStackBandsFillEachPartWithItsColourInTheLedgersOrder(t *testing.T) {
	l, err := readLedger(strings.NewReader(
		"t_ms,rss,go.heapInUse,other,netty.shared.direct,jvm.direct,go.stacks,go.gcMeta,jvm.heap.resident,unexplained\n" +
			"0,1000,200,10,100,150,12,10,500,18\n"))
	require.NoError(t, err)
	l.mergeSmall(0.02, 0)
	var labels, colors []string
	for _, b := range stackBands(l) {
		labels = append(labels, b.label)
		colors = append(colors, hexOf(b.color))
	}
	assert.Equal(t, []string{
		"jvm.heap.resident", "jvm.direct", "netty.shared.direct", "go.heapInUse", "go.* (2 parts)",
		"other", "unexplained (RSS − parts)",
	}, labels)
	assert.Equal(t, []string{
		"#4e79a7", "#b07aa1", partColor("netty.shared.direct"), "#59a14f", "#637939", // go.stacks's
		"#7f7f7f", "#c8c8c8",
	}, colors)
	assert.Contains(t, nettyColors, partColor("netty.shared.direct"))
}

// hexOf is c as "#rrggbb".
func hexOf(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

package main

// One colour per part of the executor memory ledger, and one order, for the
// ledger chart: the same as the Native Memory page's (live and in the
// History Server), so that a part has one colour in every chart of the
// project. The Java copy is
// spark/src/main/java/org/nativepool/spark/ui/LedgerColors.java;
// TestPartColorsMatchTheNativeMemoryPages checks this file against it.

import (
	"cmp"
	"fmt"
	"image/color"
	"slices"
	"strings"
)

// A ledgerPart is a part of the ledger the project knows, with its colour.
type ledgerPart struct{ part, color string }

// partColors are the ledger parts the project knows, in stacking order
// (bottom first: the ledger's display order), each with its colour.
var partColors = []ledgerPart{
	{"jvm.heap.resident", "#4e79a7"},
	{"jvm.heap.committed", "#a0cbe8"},
	{"jvm.metaspace", "#499894"},
	{"jvm.codeCache", "#86bcb6"},
	{"jvm.threads", "#9467bd"},
	{"jvm.gc", "#c5b0d5"},
	{"jvm.native", "#9d7660"},
	{"jvm.unsafe", "#d7b5a6"},
	{"jvm.direct", "#b07aa1"},
	{"jvm.mapped", "#d4a6c8"},
	{"arrow.java", "#f28e2b"},
	{"native.allocated", "#e15759"},
	{"go.heapInUse", "#59a14f"},
	{"go.heapIdle", "#8cd17d"},
	{"go.stacks", "#637939"},
	{"go.gcMeta", "#b5cf6b"},
	{"go.other", "#cedb9c"},
	{"malloc.retained", "#edc948"},
	{"offHeap.spark", "#bab0ac"},
	{"offHeap.comet", "#ff9d9a"},
	{"offHeap.gluten", "#f1ce63"},
	{"offHeap.other", "#79706e"},
	{"python.workers", "#76b7b2"},
	{"process.others", "#9c755f"},
}

const (
	// nettyPrefix starts the parts of netty's pools (netty.<pool>.resident),
	// whose names are known only at run time.
	nettyPrefix = "netty."
	// otherColor fills the band of small parts summed (colOther).
	otherColor = "#7f7f7f"
	// unexplainedColor fills the remainder, RSS less the parts.
	unexplainedColor = "#c8c8c8"
)

// nettyColors colour netty's pools and unknownColors the parts partColors
// lacks: a part takes colors[sum of its name's bytes % len], so that it
// keeps its colour wherever it is drawn (pickColor).
var (
	nettyColors   = []string{"#d37295", "#fabfd2"}
	unknownColors = []string{"#17becf", "#bcbd22"}
)

// partColor is the hex colour of part on every chart of the ledger.
func partColor(part string) string {
	if i := knownPart(part); i >= 0 {
		return partColors[i].color
	}
	switch {
	case part == colOther:
		return otherColor
	case part == colUnexplained:
		return unexplainedColor
	case strings.HasPrefix(part, nettyPrefix):
		return pickColor(nettyColors, part)
	}
	return pickColor(unknownColors, part)
}

// pickColor is colors[sum of name's bytes % len(colors)]: a colour that
// depends on the name only.
func pickColor(colors []string, name string) string {
	sum := 0
	for _, b := range []byte(name) {
		sum += int(b)
	}
	return colors[sum%len(colors)]
}

// partRank is part's place in the stack, bottom first: its index in
// partColors (netty's pools between the JVM's parts and arrow.java), then
// the parts partColors lacks, then other, then unexplained.
func partRank(part string) int {
	n := len(partColors)
	if i := knownPart(part); i >= 0 {
		return 2*i + 1 // odd: netty's pools fit between two known parts
	}
	switch {
	case part == colOther:
		return 2*n + 3
	case part == colUnexplained:
		return 2*n + 4
	case strings.HasPrefix(part, nettyPrefix):
		return 2 * knownPart("arrow.java")
	}
	return 2*n + 2
}

// knownPart is part's index in partColors, or -1.
func knownPart(part string) int {
	return slices.IndexFunc(partColors, func(p ledgerPart) bool { return p.part == part })
}

// compareParts orders parts as they stack, bottom first; ties by name.
func compareParts(a, b string) int {
	return cmp.Or(cmp.Compare(partRank(a), partRank(b)), strings.Compare(a, b))
}

// rgba parses a "#rrggbb" colour of the tables above.
func rgba(hex string) color.RGBA {
	var c color.RGBA
	if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &c.R, &c.G, &c.B); err != nil {
		panic(fmt.Sprintf("chart: colour %q: %v", hex, err)) // the tables are constants
	}
	c.A = 255
	return c
}

package writeback_test

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nativepool/nativepool/internal/writeback"
)

// refMappedFiles is the documented format read the slow way: the sixth
// field of a line onwards, with fields split on blanks (spaces and tabs;
// the kernel pads with spaces), kept when absolute and not a deleted file.
func refMappedFiles(maps string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(maps))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.FieldsFunc(line, func(c rune) bool { return c == ' ' || c == '\t' })
		if len(fields) < 6 {
			continue
		}
		// The path starts where the sixth field does.
		at := 0
		for i := range 5 {
			at += strings.Index(line[at:], fields[i]) + len(fields[i])
		}
		path := strings.TrimLeft(line[at:], " \t")
		if !strings.HasPrefix(path, "/") || strings.HasSuffix(path, " (deleted)") {
			continue
		}
		path = filepath.Clean(path)
		if !slices.Contains(out, path) {
			out = append(out, path)
		}
	}
	return out
}

// FuzzMappedFiles checks MappedFiles against refMappedFiles on any text:
// the same paths, in the same order, each absolute, clean and listed once.
// Seeds: this machine's /proc/self/maps of a Go test and hand-written
// lines with spaces, deleted files and pseudo-paths.
func FuzzMappedFiles(f *testing.F) {
	real, err := os.ReadFile("testdata/proc-self-maps-go-test")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(real))
	f.Add("7f3a30000000-7f3a30001000 r--p 00000000 fd:01 98     /tmp/dir with spaces/lib x.so\n")
	f.Add("7f3a40000000-7f3a40001000 r--p 00000000 fd:01 97     /tmp/gone.so (deleted)\n[heap]\n")
	f.Add("a b c d e /x/../y\n\ta\tb\tc\td\te\t/z\n")
	f.Fuzz(func(t *testing.T, maps string) {
		got := writeback.MappedFiles(strings.NewReader(maps))
		want := refMappedFiles(maps)
		if !slices.Equal(got, want) {
			t.Fatalf("MappedFiles = %q, the format says %q", got, want)
		}
		for _, p := range got {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				t.Fatalf("%q: not an absolute clean path", p)
			}
		}
	})
}

package bridge

import (
	"encoding/xml"
	"os"
	"testing"
)

// TestVersionMatchesPom: the Go library reports the version the plugin jar is
// stamped with, so a release bump that forgets one side fails here, not on a
// cluster.
func TestVersionMatchesPom(t *testing.T) {
	data, err := os.ReadFile("../../pom.xml")
	if err != nil {
		t.Fatalf("reading the root pom.xml: %v", err)
	}
	var pom struct {
		Version string `xml:"version"`
	}
	if err := xml.Unmarshal(data, &pom); err != nil {
		t.Fatalf("parsing the root pom.xml: %v", err)
	}
	if pom.Version != Version {
		t.Fatalf("bridge.Version = %q, pom.xml <version> = %q: change both together", Version, pom.Version)
	}
}

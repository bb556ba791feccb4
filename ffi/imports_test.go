package ffi_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// projectImports lists the packages of this module that the non-test Go
// files of dir import, sorted, without the module path.
func projectImports(t *testing.T, dir string) []string {
	t.Helper()
	const module = "github.com/nativepool/nativepool/"
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range parsed.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			if rest, ok := strings.CutPrefix(path, module); ok && !slices.Contains(out, rest) {
				out = append(out, rest)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestFFIDependsOnPoolAndTheGoRuntimeFiguresOnly pins what
// docs/ARCHITECTURE.md says of ffi ("Layers"): it imports pool, and
// internal/gomem for MeasureDrift, which itself imports nothing of the
// project; so any Go engine can use ffi without the bridge or a JVM. A new
// import fails here until the document says why.
func TestFFIDependsOnPoolAndTheGoRuntimeFiguresOnly(t *testing.T) {
	assert.Equal(t, []string{"internal/gomem", "pool"}, projectImports(t, "."))
	assert.Empty(t, projectImports(t, "../internal/gomem"), "internal/gomem is a leaf")
}

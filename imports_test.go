package llmload_test

import (
	"go/build"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/llmload/llmload/"

// moduleImports returns the packages of this module that the non-test files
// of the package in dir import, as paths relative to the module root.
func moduleImports(t *testing.T, dir string) []string {
	t.Helper()
	pkg, err := build.ImportDir(filepath.FromSlash(dir), 0)
	if err != nil {
		t.Fatalf("reading package %s: %v", dir, err)
	}
	var own []string
	for _, path := range pkg.Imports {
		if rel, ok := strings.CutPrefix(path, module); ok {
			own = append(own, rel)
		}
	}
	sort.Strings(own)
	return own
}

// TestFoundationsImportOnlyLeaves holds the layout's rule: metrics and
// capacity import nothing of the module but leaf helpers in internal/,
// packages that import nothing of the module themselves.
func TestFoundationsImportOnlyLeaves(t *testing.T) {
	for _, dir := range []string{"metrics", "capacity"} {
		for _, dep := range moduleImports(t, dir) {
			if !strings.HasPrefix(dep, "internal/") {
				t.Errorf("%s imports %s: metrics and capacity may import only leaf helpers in internal/", dir, dep)
				continue
			}
			if deeper := moduleImports(t, dep); len(deeper) > 0 {
				t.Errorf("%s imports %s, which imports %v: a helper metrics or capacity uses must import nothing of the module", dir, dep, deeper)
			}
		}
	}
}

// TestImportsPointDown holds the layering the package documentation
// states: each library package imports, of the module's packages outside
// internal/, only those below it.
func TestImportsPointDown(t *testing.T) {
	below := map[string][]string{
		"metrics":             nil,
		"capacity":            nil,
		"loadgen":             {"metrics"},
		"loadgen/loadgentest": {"loadgen", "metrics"},
		"loadgen/workload":    {"loadgen", "metrics"},
		"loadgen/sweep":       {"capacity", "loadgen", "loadgen/workload", "metrics"},
		"matrix":              {"capacity", "loadgen", "loadgen/workload", "matrix/internal/fleet", "metrics"},
		"matrix/shard":        {"capacity", "loadgen", "matrix", "matrix/internal/fleet", "metrics"},
	}
	for dir, allowed := range below {
		for _, dep := range moduleImports(t, dir) {
			if strings.HasPrefix(dep, "internal/") {
				continue
			}
			if owner, _, ok := strings.Cut(dep, "/internal/"); ok && (dir == owner || strings.HasPrefix(dir, owner+"/")) {
				continue // the package's own wire, behind its seams (loadgen/internal/...)
			}
			if !slices.Contains(allowed, dep) {
				t.Errorf("%s imports %s, which is not below it (it may import %v)", dir, dep, allowed)
			}
		}
	}
}

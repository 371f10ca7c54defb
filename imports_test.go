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

// below lists, for each library package, the module's packages outside
// internal/ it may use: those below it in the layering the package
// documentation states.
var below = map[string][]string{
	"metrics":             nil,
	"capacity":            nil,
	"loadgen":             {"metrics"},
	"loadgen/loadgentest": {"loadgen", "metrics"},
	"loadgen/workload":    {"loadgen", "metrics"},
	"loadgen/sweep":       {"capacity", "loadgen", "loadgen/workload", "metrics"},
	"matrix":              {"capacity", "loadgen", "loadgen/workload", "matrix/internal/fleet", "metrics"},
	"matrix/report":       {"capacity", "loadgen", "matrix", "metrics"},
	"matrix/shard":        {"capacity", "loadgen", "matrix", "matrix/internal/fleet", "metrics"},
}

// isLeaf reports whether dep is one of the leaf helpers the library uses:
// a package of internal/ that is neither the commands' support
// (internal/cmd) nor a harness (internal/harness).
func isLeaf(dep string) bool {
	return strings.HasPrefix(dep, "internal/") && !strings.HasPrefix(dep, "internal/cmd/") && !strings.HasPrefix(dep, "internal/harness/")
}

// TestImportsPointDown holds the layering the package documentation
// states: each library package uses, of the module's packages outside
// internal/, only those below it, and so do the leaf helpers it uses,
// however deep; it uses no command support and no harness.
func TestImportsPointDown(t *testing.T) {
	for dir, allowed := range below {
		seen := map[string]bool{}
		var walk func(from, pkg string)
		walk = func(from, pkg string) {
			for _, dep := range moduleImports(t, pkg) {
				owner, _, own := strings.Cut(dep, "/internal/")
				own = own && (dir == owner || strings.HasPrefix(dir, owner+"/"))
				switch {
				case isLeaf(dep) || own: // a leaf helper, or the package's own wire behind its seams (loadgen/internal/...)
					if !seen[dep] {
						seen[dep] = true
						walk(from+" → "+dep, dep)
					}
				case strings.HasPrefix(dep, "internal/") || strings.HasPrefix(dep, "examples/"):
					t.Errorf("%s imports %s: the library and its leaf helpers use no command support or harness", from, dep)
				case !slices.Contains(allowed, dep):
					t.Errorf("%s imports %s, which is not below %s (it may use %v)", from, dep, dir, allowed)
				}
			}
		}
		walk(dir, dir)
	}
}

// TestHelpersKeepTheirPlace holds the folders of internal/: a leaf helper
// uses no command support and no harness, and the commands' support uses
// no harness; nothing imports a command.
func TestHelpersKeepTheirPlace(t *testing.T) {
	dirs, err := filepath.Glob("internal/*/")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("internal/*/*/")
	for _, dir := range append(dirs, more...) {
		dir = filepath.ToSlash(filepath.Clean(dir))
		if dir == "internal/cmd" || dir == "internal/harness" {
			continue
		}
		if _, err := build.ImportDir(dir, 0); err != nil {
			continue // a folder of data, not a package
		}
		for _, dep := range moduleImports(t, dir) {
			switch {
			case strings.HasPrefix(dep, "examples/"):
				t.Errorf("%s imports the command %s", dir, dep)
			case isLeaf(dir) && !isLeaf(dep) && strings.HasPrefix(dep, "internal/"):
				t.Errorf("%s, a leaf helper, imports %s: the commands' support and the harnesses sit above the library", dir, dep)
			case strings.HasPrefix(dir, "internal/cmd/") && strings.HasPrefix(dep, "internal/harness/"):
				t.Errorf("%s, the commands' support, imports the harness %s", dir, dep)
			}
		}
	}
}

package llmload_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestCIFuzzesEveryTarget: the CI script runs every fuzz target of the
// module, each named with the package that holds it. A target moved to
// another package, with the script still naming the old one, fuzzes
// nothing, and go test says so only as a warning.
func TestCIFuzzesEveryTarget(t *testing.T) {
	script, err := os.ReadFile(filepath.Join(".ci", "run"))
	if err != nil {
		t.Fatalf("reading the CI script: %v", err)
	}
	listed := map[string]string{} // target → package directory
	for _, m := range regexp.MustCompile(`"([a-z0-9/]+) (Fuzz[A-Za-z0-9]+) [0-9]+x"`).FindAllStringSubmatch(string(script), -1) {
		listed[m[2]] = m[1]
	}
	if len(listed) == 0 {
		t.Fatal("the CI script lists no fuzz target")
	}
	defined := map[string]string{}
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz[A-Za-z0-9]+)\(`)
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (path == "deploy" || strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir // deploy is a module of its own
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(b), -1) {
			defined[m[1]] = filepath.ToSlash(filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range defined {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch pkg, ok := listed[name]; {
		case !ok:
			t.Errorf("%s (in %s) is not run by the CI script", name, defined[name])
		case pkg != defined[name]:
			t.Errorf("the CI script fuzzes %s in %s, but it is in %s", name, pkg, defined[name])
		}
	}
	for name, pkg := range listed {
		if _, ok := defined[name]; !ok {
			t.Errorf("the CI script fuzzes %s in %s, which no test file defines", name, pkg)
		}
	}
}

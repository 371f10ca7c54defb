package loadgen_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmload/llmload/loadgen"
)

// TestConfigErrorFieldDoc: the settings ConfigError.Field's doc gives as
// examples are fields that exist, so a user matching on them matches
// something.
func TestConfigErrorFieldDoc(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, parser.ParseComments)
	require.NoError(t, err)
	var doc string
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == "ConfigError" {
			for _, fl := range ts.Type.(*ast.StructType).Fields.List {
				if fl.Names[0].Name == "Field" {
					doc = fl.Doc.Text()
				}
			}
		}
		return true
	})
	names := regexp.MustCompile(`"([A-Z]\w*(?:\.\w+)+)"`).FindAllStringSubmatch(doc, -1)
	require.NotEmpty(t, names, "ConfigError.Field's doc gives no example: %q", doc)
	types := map[string]reflect.Type{
		"Generator": reflect.TypeFor[loadgen.Generator](),
		"Client":    reflect.TypeFor[loadgen.Client](),
		"Request":   reflect.TypeFor[loadgen.Request](),
		"Closed":    reflect.TypeFor[loadgen.Closed](),
		"Open":      reflect.TypeFor[loadgen.Open](),
		"Schedule":  reflect.TypeFor[loadgen.Schedule](),
	}
	for _, m := range names {
		path := strings.Split(m[1], ".")
		typ, ok := types[path[0]]
		if !assert.True(t, ok, "%s: no type %s", m[1], path[0]) {
			continue
		}
		for _, name := range path[1:] {
			for typ.Kind() == reflect.Pointer {
				typ = typ.Elem()
			}
			sf, ok := typ.FieldByName(name)
			if !assert.True(t, ok, "%s: %s has no field %s", m[1], typ, name) {
				break
			}
			typ = sf.Type
		}
	}
}

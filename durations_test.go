package llmload_test

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmload/llmload/loadgen/sweep"
	"github.com/llmload/llmload/matrix"
	"github.com/llmload/llmload/matrix/report"
)

// numericDurations are the fields written before the rule on durations in
// files (README, "Durations in files"): integer nanoseconds under a name
// without the _ns suffix. They stay as they are so files already written
// read; no field joins them.
var numericDurations = map[string]bool{
	"metrics.Distribution.min": true, "metrics.Distribution.mean": true,
	"metrics.Distribution.p50": true, "metrics.Distribution.p90": true,
	"metrics.Distribution.p99": true, "metrics.Distribution.max": true,
	"metrics.Summary.measured_for": true,
}

// TestDurationsInFilesFollowOneRule walks the documents llmload writes and
// holds the rule for every time.Duration in them: one a person writes (a
// setting) is text ("30s", a type with its own text form); one a program
// writes for a program is integer nanoseconds, named …_ns. Figures in
// milliseconds or seconds are floats named …_ms or …_s, which the type
// does not show: the review holds those.
func TestDurationsInFilesFollowOneRule(t *testing.T) {
	var bad []string
	seen := map[reflect.Type]bool{}
	durationType := reflect.TypeOf(time.Duration(0))
	textType := reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
	jsonType := reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] {
			return
		}
		seen[typ] = true
		custom := typ.Implements(jsonType) || reflect.PointerTo(typ).Implements(jsonType)
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() || custom && f.Tag.Get("json") == "" {
				continue // a type that writes itself names its untagged fields its own way (metrics.SLO: text)
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			own := f.Type.Implements(textType) || f.Type.Implements(jsonType) ||
				reflect.PointerTo(f.Type).Implements(textType) || reflect.PointerTo(f.Type).Implements(jsonType)
			switch {
			case f.Type == durationType && name != "-" && !strings.HasSuffix(name, "_ns"):
				where := typ.String() + "." + name
				if !numericDurations[where] {
					bad = append(bad, where)
				}
			case own && f.Type.Kind() != reflect.Struct:
			default:
				walk(f.Type)
			}
		}
	}
	for _, doc := range []any{matrix.Results{}, report.Comparison{}, sweep.Results{}} {
		walk(reflect.TypeOf(doc))
	}
	if len(bad) > 0 {
		t.Errorf("durations written as bare integers of nanoseconds: %v; name them …_ns, or give them a text form (\"30s\") if a person writes them", bad)
	}
	if len(seen) < 20 {
		t.Errorf("walked only %d types: the walk lost its way", len(seen))
	}
}

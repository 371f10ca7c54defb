package matrix

import (
	"fmt"
	"math"
	"reflect"
	"strings"
)

// maxFigure bounds every figure a results file may hold: far above any
// measurement (a trillion tokens a second, or of anything), below what
// prints as a number a reader can take in.
const maxFigure = 1e12

// signedFigures are the fields whose figures may be negative.
var signedFigures = map[string]bool{"clock_offset_ms": true, "series": true}

// checkFigures reports the first figure of loaded results that cannot be
// a measurement: a NaN or an infinity, a negative count or time, or a
// rate or share beyond maxFigure, named by its place in the file.
func checkFigures(r *Results) error {
	return checkValue(reflect.ValueOf(r).Elem(), "")
}

func checkValue(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return checkValue(v.Elem(), path)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			sub := join(path, name)
			switch {
			case f.Anonymous:
				sub = path // its fields are its holder's, in the file
			case name == "" || name == "-":
				sub = join(path, f.Name)
			}
			if err := checkValue(v.Field(i), sub); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := checkValue(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if err := checkValue(iter.Value(), fmt.Sprintf("%s[%v]", path, iter.Key())); err != nil {
				return err
			}
		}
	case reflect.Float32, reflect.Float64:
		return checkFigure(v.Float(), path, maxFigure)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		// Counts, and durations in nanoseconds: only their sign is
		// checked.
		return checkFigure(float64(v.Int()), path, math.Inf(1))
	}
	return nil
}

func checkFigure(x float64, path string, most float64) error {
	last := path[strings.LastIndexAny(path, ".]")+1:]
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return fmt.Errorf("%s is %v, not a figure", path, x)
	case x < 0 && !signedFigures[last]:
		return fmt.Errorf("%s is %v, below 0", path, x)
	case math.Abs(x) > most:
		return fmt.Errorf("%s is %g, beyond any measurement", path, x)
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

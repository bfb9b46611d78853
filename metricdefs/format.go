package metricdefs

import (
	"fmt"
	"reflect"
	"strings"
)

// floatVerbs are the fmt verbs that print a float64: reports apply a
// metric's format to its value as a float64 (results.json holds numbers as
// floats), so an integer or string verb would print %!d(float64=…).
const floatVerbs = "eEfFgGxXv"

// checkFormat checks a metric's format string against the type of its
// value: one verb, for a number, that prints a float64; no format for a
// string or boolean metric (reports print those as they are).
func checkFormat(format string, t reflect.Type) error {
	if format == "" {
		return nil
	}
	if t != nil && t.Kind() != reflect.Interface && !isNumber(t.Kind()) {
		return fmt.Errorf("format %q applies to numbers; this metric is %s (drop the format)", format, t)
	}
	var verbs []byte
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		if i < len(format) && format[i] == '%' {
			continue
		}
		for i < len(format) && strings.IndexByte("+-# 0123456789.", format[i]) >= 0 {
			i++
		}
		if i >= len(format) {
			return fmt.Errorf("format %q ends inside a verb", format)
		}
		if format[i] == '*' || format[i] == '[' {
			return fmt.Errorf("format %q: argument widths and indexes (* and [n]) are not supported", format)
		}
		verbs = append(verbs, format[i])
	}
	if len(verbs) != 1 {
		return fmt.Errorf("format %q must have exactly one verb such as %%.2f, found %d", format, len(verbs))
	}
	if strings.IndexByte(floatVerbs, verbs[0]) < 0 {
		return fmt.Errorf("format %q: verb %%%c does not print a number stored as float64 (use %%f, %%e, %%g or %%v, e.g. %%.0f for a whole number)", format, verbs[0])
	}
	return nil
}

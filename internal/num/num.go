// Package num reads a number out of an any: a value of run.json or
// results.json (float64 from JSON, json.Number from a decoder that keeps
// them), of a profile's parameters (int from YAML) or of an expression
// (any Go number type). It is the one place that knows those types.
package num

import (
	"encoding/json"
	"math"
)

// Float is v as a float64 when v is a Go number (any int, uint or float
// type) or a json.Number; false for anything else (nil, bool, a string:
// text that may be a number is parsed by whoever accepts it as one).
// NaN and ±Inf are numbers here (Finite refuses them).
func Float(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// Finite is Float of a finite number: NaN and ±Inf are not.
func Finite(v any) (float64, bool) {
	f, ok := Float(v)
	return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// Positive is Finite of a number above 0.
func Positive(v any) (float64, bool) {
	f, ok := Finite(v)
	return f, ok && f > 0
}

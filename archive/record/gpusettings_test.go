package record

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// jsonKeys are the keys v marshals to with every string field set.
func jsonKeys(t *testing.T, v any) map[string]bool {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for k, x := range m {
		if x != "" && x != nil && x != false && x != 0.0 {
			out[k] = true
		}
	}
	return out
}

// yamlKey is the yaml key of the field of GPUSettingAxes p points to.
func yamlKey(a *GPUSettingAxes, p *[]string) string {
	v := reflect.ValueOf(a).Elem()
	for i := range v.NumField() {
		if v.Field(i).Addr().Interface() == p {
			return strings.Split(v.Type().Field(i).Tag.Get("yaml"), ",")[0]
		}
	}
	return ""
}

// Every entry of the table names its setting consistently: unique keys,
// flags and parameters; its Value field is the spec file's key
// "gpu_"+the flag's last words, its Axis the parameter's yaml key, its
// Asked field run.json's Field, its journal flag reset_<Key>, and a lock's
// device fields <Key>-named run.json fields.
func TestGPUSettingsTable(t *testing.T) {
	table := GPUSettingsTable()
	seen := map[string]bool{}
	for _, s := range table {
		t.Run(s.Key, func(t *testing.T) {
			for _, id := range []string{"key " + s.Key, "flag " + s.Flag, "param " + s.Param, "field " + s.Field} {
				if seen[id] {
					t.Errorf("%s given twice", id)
				}
				seen[id] = true
			}
			if s.Name == "" || s.Short == "" || s.Unit == "" || s.Usage == "" || !strings.HasPrefix(s.Flag, "gpu-") {
				t.Errorf("entry %+v lacks a name, unit, usage or gpu- flag", s)
			}
			if !strings.Contains(s.Usage, "--set "+s.Param+"=") {
				t.Errorf("usage %q does not name --set %s=", s.Usage, s.Param)
			}
			var v GPUSettingValues
			*s.Value(&v) = "x"
			if want := strings.ReplaceAll(s.Flag, "-", "_"); !reflect.DeepEqual(jsonKeys(t, v), map[string]bool{want: true}) {
				t.Errorf("value field %v, want %s", jsonKeys(t, v), want)
			}
			var a GPUSettingAxes
			if got := yamlKey(&a, s.Axis(&a)); got != s.Param {
				t.Errorf("axis yaml key %q, want the parameter %q", got, s.Param)
			}
			var g GPUSettings
			*s.Asked(&g) = "x"
			if got := jsonKeys(t, g); !reflect.DeepEqual(got, map[string]bool{s.Field: true}) {
				t.Errorf("asked field %v, want %s", got, s.Field)
			}
			switch s.Kind {
			case GPULimit:
				if s.Reset != nil || s.Device != nil || s.Unit != "W" {
					t.Errorf("a limit has no lock fields and is in W")
				}
			case GPULock:
				var r GPUSettingResets
				*s.Reset(&r) = true
				if got := jsonKeys(t, r); !reflect.DeepEqual(got, map[string]bool{"reset_" + s.Key: true}) {
					t.Errorf("journal field %v, want reset_%s", got, s.Key)
				}
				var d GPUSettingsDevice
				f := s.Device(&d)
				*f.Asked, *f.Min, *f.Max = "x", 1, 2
				for k := range jsonKeys(t, d) {
					if !strings.HasPrefix(k, strings.TrimSuffix(s.Key, "s")) {
						t.Errorf("device field %s is not named after %s", k, s.Key)
					}
				}
				if (f.ReadBack != nil) != (s.ReadBackNote != "") || (f.ReadBack != nil) != (f.Note != nil) {
					t.Errorf("a read-back field goes with its note and ReadBackNote")
				}
			default:
				t.Errorf("kind %d", s.Kind)
			}
		})
	}
	if len(table) != 3 || table[0].Kind != GPULimit {
		t.Errorf("the table has %d entries, the power limit first", len(table))
	}
}

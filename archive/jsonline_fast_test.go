package archive

import (
	"github.com/joulebench/joulebench/archive/record"
	"testing"
)

// Lines that take the token_times fast path, or only nearly do, decode as
// encoding/json decodes them.
func TestDecodeRequestTokenTimesFastPath(t *testing.T) {
	for _, line := range []string{
		`{"id":"a","token_times":[1717405210.123456789, 1717405210.2 ,-0.5e-3,1E2,0],"ok":true}`,
		`{ "token_times" : [ 1 , 2 ] , "id" : "s" }`,
		`{"token_times":[1]}`,                              // shorter than null: general path
		`{"token_times":[1,2],"Token_Times":[3,4]}`,        // another spelling wins in encoding/json
		`{"token_\u0074imes":[5,6],"token_times":[1,2]}`,   // escaped name
		`{"token_times":[1,2],"token_times":[7,8]}`,        // repeated
		`{"token_times":[1e999,2]}`,                        // out of range
		`{"token_times":[01,2]}`, `{"token_times":[1.,2]}`, // not JSON numbers
		`{"token_times":[1,2],"id":"x\"}],\"token_times\":[9,9]"}`, // a name inside a string
		`{"token_times":[1,2],"engine_timings":{"a":[1,{"b":"}"}]}}`,
		`{"token_times":[1,2]`, `{"token_times":[1,2]} x`, `{"token_times":[1,2],}`,
		`{"token_times":[1,2],"sent_at":"x"}`, // a type error elsewhere: its column
		// parseNumber's ways: 17 and 15 digits, above 2^53, a 20-digit
		// mantissa, exponents, -0; then arrays that are not lists of numbers
		`{"token_times":[1717405260.2896886,1717405260.41807,9007199254740993,17174052101234567891e-10,1e23,-0,4.9e-324]}`,
		`{"token_times":[	1 ,2	, 3 ]}`, `{"token_times":[1,,2]}`, `{"token_times":[1 2]}`, `{"token_times":[]}`,
		`{"token_times":[1,]}`, `{"token_times":[1,null,2]}`, `{"token_times":[1,"2"]}`, `{"token_times":[1,[2]]}`,
		`{"token_times":[1,2}`, `{"token_times":[-,2]}`, `{"token_times":[1e5000,2]}`,
	} {
		t.Run(line, func(t *testing.T) { differential(t, []byte(line), (*jsonLine).decodeRequest) })
	}
}

// Decoded token_times keep no spare capacity.
func TestDecodeRequestTokenTimesExactCapacity(t *testing.T) {
	var d jsonLine
	var r record.Request
	if err := d.decodeRequest([]byte(`{"id":"a","token_times":[1,2,3,4,5,6,7,8,9]}`), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.TokenTimes) != 9 || cap(r.TokenTimes) != 9 || r.TokenTimes[8] != 9 {
		t.Errorf("token_times %v, cap %d; want 1..9, cap 9", r.TokenTimes, cap(r.TokenTimes))
	}
}

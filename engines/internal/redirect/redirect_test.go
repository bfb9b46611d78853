package redirect

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestSameHost(t *testing.T) {
	req := func(s string) *http.Request {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return &http.Request{URL: u}
	}
	first := req("http://127.0.0.1:8000/v1/models?api_key=q")
	cases := []struct {
		name, to string
		hops     int
		other    bool // refused as another host
		ok       bool
	}{
		{"same host, other path", "http://127.0.0.1:8000/v1/models/", 1, false, true},
		{"other port", "http://127.0.0.1:8001/v1/models", 1, true, false},
		{"other name of the host", "http://localhost:8000/v1/models", 1, true, false},
		{"other host", "http://evil.example/steal?api_key=q", 1, true, false},
		{"scheme change", "https://127.0.0.1:8000/v1/models", 1, true, false},
		{"too many hops", "http://127.0.0.1:8000/x", MaxHops, false, false},
	}
	for _, c := range cases {
		via := make([]*http.Request, c.hops)
		for i := range via {
			via[i] = first
		}
		err := SameHost(req(c.to), via)
		if (err == nil) != c.ok || errors.Is(err, ErrOtherHost) != c.other {
			t.Errorf("%s: %v", c.name, err)
		}
		if err != nil && strings.Contains(err.Error(), "api_key=q") {
			t.Errorf("%s: the error shows the query value: %v", c.name, err)
		}
	}
	if c := Guard(nil); c.CheckRedirect == nil {
		t.Error("Guard(nil) has no redirect policy")
	}
	orig := &http.Client{}
	if g := Guard(orig); g == orig || orig.CheckRedirect != nil {
		t.Error("Guard changed the client it was given")
	}
}

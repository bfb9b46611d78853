package prometheus

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// --prometheus-url's password and query values appear in no error.
func TestErrorsHideURLSecrets(t *testing.T) {
	const pw, q = "pRoMpAsS", "pRoMtOkEn"
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
	}))
	defer empty.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	withSecrets := func(base string) string {
		return strings.Replace(base, "http://", "http://u:"+pw+"@", 1) + "/?tok=" + q
	}
	for _, c := range []struct{ name, url, want string }{
		{"bad scheme", "ftp://u:" + pw + "@h/?tok=" + q, "want http://HOST:9090"},
		{"unreachable", withSecrets(closed.URL), "u:[redacted]@127.0.0.1"},
		{"no samples", withSecrets(empty.URL), "no DCGM_FI_DEV_POWER_USAGE"},
	} {
		_, err := Open(context.Background(), Options{URL: c.url})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), q) {
			t.Errorf("%s: error shows a secret: %v", c.name, err)
		}
	}
}

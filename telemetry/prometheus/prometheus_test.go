package prometheus

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestGaps(t *testing.T) {
	// Scrapes at 0, 1, 2, 4, 5: gaps 1, 1, 2, 1; sorted 1, 1, 1, 2, the
	// median (index 2 of 4) is a 1 s gap, the largest is 2 → 4.
	from, to, mf, mt, ok := Gaps([]float64{0, 1, 2, 4, 5})
	if !ok || to-from != 1 || mf != 2 || mt != 4 {
		t.Fatalf("Gaps = %v %v %v %v %v", from, to, mf, mt, ok)
	}
	if _, _, _, _, ok := Gaps([]float64{1}); ok {
		t.Fatal("one sample has no gap")
	}
}

// A fake Prometheus API: power 100 + t W, counter (in mJ) at 1 s scrapes
// from t=0 to t=10, enforced power limit 250 W.
func fakeAPI(t *testing.T) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("query")
		var vals []string
		for s := 0; s <= 10; s++ {
			v := 100.0 + float64(s)
			if strings.HasPrefix(q, DefaultEnergyMetric) {
				v = 1000 * (100*float64(s) + float64(s*s)/2) // ∫(100+t)dt in mJ
			} else if strings.HasPrefix(q, DefaultMemMetric) {
				v = 2
			} else if strings.HasPrefix(q, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT") {
				v = 250 // the limit a run set (--gpu-power-limit 250)
			} else if strings.HasPrefix(q, "DCGM_FI_DEV_POWER_MGMT_LIMIT") {
				v = 300 // read only when the enforced limit is absent
			}
			vals = append(vals, fmt.Sprintf("[%d,\"%g\"]", s, v))
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"x","gpu":"0","UUID":"GPU-1","Hostname":"node1"},"values":[%s]}]}}`, strings.Join(vals, ","))
	}))
}

func TestOpenAndRead(t *testing.T) {
	srv := fakeAPI(t)
	defer srv.Close()
	now := 10.0
	src, err := Open(context.Background(), Options{URL: srv.URL, Clock: func() float64 { return now }})
	if err != nil {
		t.Fatal(err)
	}
	devs, _ := src.Devices(context.Background())
	if len(devs) != 1 || devs[0].ID != "node1/gpu0" || devs[0].Method != "counter" || devs[0].PowerLimitW != 250 {
		t.Fatalf("devices %+v", devs)
	}
	// Open starts after the newest stored sample (t=10): nothing new yet.
	src.lastT = 7
	rs, err := src.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Samples 8, 9, 10: power 108..110 W; counter at 10: 1000 + 50 = 1050 J;
	// memory 2 MiB.
	if len(rs) != 3 || rs[0].T != 8 || rs[2].PowerW != 110 || rs[2].EnergyJ != 1050 || rs[2].MemUsedBytes != 2<<20 {
		t.Fatalf("readings %+v", rs)
	}
	an := src.Anomalies()
	if len(an) != 4 || an[0].Kind != EventIntervalFrom || an[1].T-an[0].T != 1 {
		t.Fatalf("anomalies %+v", an)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(context.Background(), Options{URL: "ftp://x"}); err == nil || !strings.Contains(err.Error(), "want http://HOST:9090") {
		t.Fatalf("bad URL: %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"parse error"}`)
	}))
	defer srv.Close()
	if _, err := Open(context.Background(), Options{URL: srv.URL}); err == nil || !strings.Contains(err.Error(), "bad_data: parse error") {
		t.Fatalf("API error: %v", err)
	}
}

package main

import (
	"strings"
	"testing"
	"time"
)

func TestReportShowsRatiosAndFloor(t *testing.T) {
	r := report{when: time.Unix(0, 0), cfg: config{p: 512, n: 128, r: 3, threads: 2, bandwidth: 47},
		rows: []row{{bench: bench{defaultShape, "q4_0"}, bytes: 636725856, weftPP: stat{Median: 150}, weftTG: stat{Median: 60}, peerPP: stat{Median: 146, Runs: []float64{146}}, peerTG: stat{Median: 50, Runs: []float64{50}},
			ppRatio: stat{Median: 1.03, Runs: []float64{1.01, 1.03, 1.1}}, tgRatio: stat{Median: 1.2, Runs: []float64{1.2}}, bandwidth: stat{Median: 40}}}}
	md := r.markdown()
	for _, want := range []string{"| Q4_0 | 607 MiB | 150.0 | 146.0 | 1.03× (1.01–1.10) | 60.0 | 50.0 | 1.20× (1.20–1.20) | 73.8 | 81% | 40.0 | 96% |", "benchmarks.svg"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if svg := r.svg(); strings.Count(svg, "<rect") != 2*2+3 {
		t.Errorf("svg has %d rects", strings.Count(svg, "<rect"))
	}
}

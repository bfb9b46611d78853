// Package htmlreport writes one self-contained HTML file for an archived
// run (WriteRun) or for a comparison of runs (WriteCompare): markup from
// html/template (every value escaped: run labels and model names are user
// input), the charting library, the styles, the scripts and the data
// inline, so the file opens offline, from a file:// URL or an e-mail
// attachment, with nothing fetched at view time.
//
// # Charting library
//
// uPlot (https://github.com/leeoniya/uPlot), MIT licensed, chosen for its
// size and speed on long time series: its minified build is about 50 KB
// (ECharts is about 1 MB, Plotly about 3.5 MB, Vega-Lite with Vega about
// 800 KB), it draws on a canvas, and it has cursor hover with a legend of
// exact values, drag-to-zoom and synchronised cursors across charts built
// in. It was taken once from the npm registry and is committed under
// assets/ with its license, so a fresh clone builds without npm:
//
//	npm pack uplot@1.6.32
//	uplot-1.6.32.tgz              sha256 4b8a8191e425658e3ea8c8c1314b0fc679c861ee3a1af2b20c7b16ba50b5133d
//	dist/uPlot.iife.min.js  51081 B, sha256 19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f
//	dist/uPlot.min.css       1857 B, sha256 df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04
//	LICENSE                  1078 B, sha256 8f989229699b4fe2f1a0432d0e9edc338a8a911e250e2d1b01ecd770a5f5b1bd
//
// (assets/uPlot.LICENSE is that LICENSE; TestAssetsPinned checks the
// three hashes.) Our own glue is assets/report.js and assets/report.css.
//
// # What is drawn from what
//
// Every number in the tables is a value of the run's results (the same
// evaluation `joulebench analyze` and `report` make) or of its raw data.
// The power timeline is the plot package's data (plot.Prepare): per
// device and summed, each line decimated for display to at most about
// 3000 points keeping each bucket's minimum and maximum, so spikes stay;
// the stage bands and the steady-state span are the archive's stages and
// the results' steady_window_start/end. Latency distributions are
// empirical CDFs drawn through at most 201 points of the sorted values,
// with p50/p90/p99 from measure.Percentile over all values.
package htmlreport

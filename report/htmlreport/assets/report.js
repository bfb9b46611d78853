// joulebench HTML report: draws the charts with uPlot from window.JB and
// makes the request tables sortable and paged. Every text that comes from
// the data is set with textContent, never as markup.
(function () {
  'use strict';
  var JB = window.JB || { runs: [] };
  // Every chart by its element id (the browser tests read them).
  var charts = {};
  window.jbCharts = charts;
  var palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
  var stageColors = { baseline: 'rgba(120,120,120,0.13)', startup: 'rgba(255,165,0,0.13)', warmup: 'rgba(255,215,0,0.16)',
    formal: 'rgba(30,144,255,0.10)', release: 'rgba(60,179,113,0.13)', hold: 'rgba(186,85,211,0.12)' };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }

  function num(v, digits) {
    if (v === null || v === undefined || isNaN(v)) { return '--'; }
    return Number(v).toFixed(digits);
  }

  function widthOf(node) {
    return Math.max(320, Math.floor((node.clientWidth || 900) - 4));
  }

  // bandsPlugin draws x intervals (stages, the steady span) as elements
  // over the plot, placed at their values on the x scale and moved with it.
  function bandsPlugin(bands, steady) {
    var nodes = [];
    function place(u) {
      var w = u.over.clientWidth;
      nodes.forEach(function (n) {
        var a = u.valToPos(n.b.start, 'x'), b = u.valToPos(n.b.end, 'x');
        var l = Math.max(0, Math.min(w, a)), r = Math.max(0, Math.min(w, b));
        n.node.style.left = l + 'px';
        n.node.style.width = Math.max(0, r - l) + 'px';
        n.node.style.display = r > l || (a >= 0 && a <= w) ? '' : 'none';
      });
    }
    return {
      hooks: {
        ready: function (u) {
          (bands || []).forEach(function (b) {
            var n = el('div', 'band');
            n.dataset.stage = b.name;
            n.dataset.start = b.start;
            n.dataset.end = b.end;
            n.style.background = stageColors[b.name] || 'rgba(100,100,100,0.08)';
            var lab = el('span', 'band-label', b.name);
            lab.style.top = (2 + 14 * (b.level || 0)) + 'px';
            n.appendChild(lab);
            u.over.appendChild(n);
            nodes.push({ b: b, node: n });
          });
          if (steady) {
            var s = el('div', 'steady');
            s.dataset.start = steady.start;
            s.dataset.end = steady.end;
            s.appendChild(el('span', 'band-label steady-label', steady.name));
            u.over.appendChild(s);
            nodes.push({ b: steady, node: s });
          }
          place(u);
        },
        setScale: function (u, key) { if (key === 'x') { place(u); } },
        setSize: function (u) { place(u); }
      }
    };
  }

  // baselinePlugin shades the release stage's baseline ± tolerance band.
  function baselinePlugin(bl) {
    return {
      hooks: {
        drawClear: function (u) {
          if (!bl) { return; }
          var ctx = u.ctx;
          var x0 = u.valToPos(bl.start, 'x', true), x1 = u.valToPos(bl.end, 'x', true);
          var y0 = u.valToPos(bl.hi, 'y', true), y1 = u.valToPos(bl.lo, 'y', true);
          ctx.save();
          ctx.fillStyle = 'rgba(0,128,0,0.12)';
          ctx.fillRect(x0, y0, x1 - x0, y1 - y0);
          ctx.restore();
        }
      }
    };
  }

  // markersPlugin draws vertical lines at x values, labelled.
  function markersPlugin(marks) {
    var nodes = [];
    function place(u) {
      var w = u.over.clientWidth;
      nodes.forEach(function (n) {
        var x = u.valToPos(n.m.x, 'x');
        n.node.style.left = x + 'px';
        n.node.style.display = x >= 0 && x <= w ? '' : 'none';
        // A label near the right edge goes left of its line.
        var right = x > w * 0.6;
        n.label.style.left = right ? 'auto' : '3px';
        n.label.style.right = right ? '3px' : 'auto';
      });
    }
    return {
      hooks: {
        ready: function (u) {
          marks.forEach(function (m, i) {
            var n = el('div', 'marker');
            n.dataset.marker = m.name;
            n.dataset.x = m.x;
            var lab = el('span', 'marker-label', m.name + ' ' + m.text);
            lab.style.top = (2 + 14 * i) + 'px';
            n.appendChild(lab);
            u.over.appendChild(n);
            nodes.push({ m: m, node: n, label: lab });
          });
          place(u);
        },
        setScale: function (u, key) { if (key === 'x') { place(u); } },
        setSize: function (u) { place(u); }
      }
    };
  }

  // syncX zooms the timelines of a run together.
  var groups = {};
  function syncX(key) {
    var group = groups[key] = groups[key] || [];
    return {
      hooks: {
        ready: function (u) { group.push(u); },
        setScale: function (u, k) {
          if (k !== 'x') { return; }
          var mn = u.scales.x.min, mx = u.scales.x.max;
          group.forEach(function (o) {
            if (o !== u && (o.scales.x.min !== mn || o.scales.x.max !== mx)) { o.setScale('x', { min: mn, max: mx }); }
          });
        }
      }
    };
  }

  function xSeries(label, digits, unit) {
    return { label: label, value: function (u, v) { return v === null ? '--' : num(v, digits) + (unit ? ' ' + unit : ''); } };
  }

  function ySeries(label, color, digits, unit, extra) {
    var s = { label: label, stroke: color, width: 1.25, spanGaps: true,
      value: function (u, v) { return v === null ? '--' : num(v, digits) + (unit ? ' ' + unit : ''); } };
    for (var k in (extra || {})) { s[k] = extra[k]; }
    return s;
  }

  // join aligns the series on the union of their x values; with range,
  // the x values also span it (the series are empty there), so that the
  // timelines of a run start and end together, also after a zoom reset.
  function join(list, range) {
    var tables = list.map(function (s) { return [s.x, s.y]; });
    if (range) { tables.push([range, [null, null]]); }
    var data = uPlot.join(tables);
    if (range) { data.pop(); }
    return data;
  }

  // decimals is how many decimals a step of incr needs (0.25: 2, 5: 0).
  function decimals(incr) {
    var s = String(Number(Math.abs(incr).toPrecision(6)));
    var e = s.indexOf('e-');
    if (e >= 0) {
      var m = s.slice(0, e), dot = m.indexOf('.');
      return Math.min(20, parseInt(s.slice(e + 2), 10) + (dot < 0 ? 0 : m.length - dot - 1));
    }
    var i = s.indexOf('.');
    return i < 0 ? 0 : Math.min(20, s.length - i - 1);
  }

  // ticks labels an axis with as many decimals as its step needs, so that
  // close values (0.2487 and 0.2489) do not print alike.
  function ticks(u, splits, axis, space, incr) {
    var d = decimals(incr);
    return splits.map(function (v) { return v === null ? '' : Number(v).toFixed(d); });
  }

  function make(id, opts, data) {
    var node = document.getElementById(id);
    if (!node) { return null; }
    (opts.axes || []).forEach(function (a) { if (!a.values) { a.values = ticks; } });
    opts.width = widthOf(node);
    opts.height = opts.height || 300;
    var u = new uPlot(opts, data, node);
    node.dataset.series = String(opts.series.length - 1);
    charts[id] = u;
    return u;
  }

  function note(node, text) {
    if (node) { node.appendChild(el('p', 'note', text)); }
  }

  // The x range every timeline of a run shares.
  function timeRange(run) {
    var lo = Infinity, hi = -Infinity;
    (run.power || []).concat(run.engine || []).forEach(function (s) {
      if (s.x.length) { lo = Math.min(lo, s.x[0]); hi = Math.max(hi, s.x[s.x.length - 1]); }
    });
    (run.stages || []).forEach(function (b) { lo = Math.min(lo, b.start); hi = Math.max(hi, b.end); });
    return isFinite(lo) && hi > lo ? [lo, hi] : null;
  }

  function powerChart(prefix, run, range) {
    var id = prefix + '-power';
    if (!run.power || !run.power.length) { note(document.getElementById(id), 'No power samples in this run.'); return null; }
    var series = [xSeries('time since start', 3, 's')];
    run.power.forEach(function (s, i) {
      var last = i === run.power.length - 1 && run.power.length > 1;
      series.push(ySeries(s.name + (run.simulated ? ' (simulated)' : ''), palette[i % palette.length], 1, 'W', { width: last ? 2 : 1.25 }));
    });
    var opts = {
      title: 'Power (W)' + (run.simulated ? ', SIMULATED' : ''),
      // Power from zero: a node at 6 kW is not drawn as swings from 2 kW.
      scales: { x: { time: false }, y: { range: function (u, lo, hi) { return [0, hi > 0 ? hi * 1.05 : 1]; } } },
      axes: [{ label: 'seconds since the run started' }, { label: 'W' }],
      series: series,
      cursor: { sync: { key: prefix } },
      plugins: [bandsPlugin(run.stages, run.steady), baselinePlugin(run.baseline), syncX(prefix)]
    };
    return make(id, opts, join(run.power, range));
  }

  function engineChart(prefix, run, range) {
    var id = prefix + '-engine';
    var noteNode = document.getElementById(prefix + '-engine-note');
    if (!run.engine || !run.engine.length) {
      if (noteNode) { noteNode.textContent = 'No engine state: the run archived no /metrics scrapes of running or waiting requests or KV-cache usage.'; }
      var n = document.getElementById(id);
      if (n) { n.style.display = 'none'; }
      return null;
    }
    if (noteNode) { noteNode.textContent = 'Engine state from its /metrics side path (explains, never measures energy).'; }
    var series = [xSeries('time since start', 3, 's')];
    var hasPct = false;
    run.engine.forEach(function (s, i) {
      hasPct = hasPct || s.scale === 'pct';
      series.push(ySeries(s.name, palette[(i + 3) % palette.length], s.scale === 'pct' ? 1 : 0, s.unit, { scale: s.scale, paths: uPlot.paths.stepped({ align: 1 }) }));
    });
    var axes = [{ label: 'seconds since the run started' }, { scale: 'n', label: 'requests' }];
    if (hasPct) { axes.push({ scale: 'pct', side: 1, label: 'KV cache %', grid: { show: false } }); }
    var opts = {
      title: 'Engine state (/metrics)' + (run.simulated ? ', SIMULATED' : ''),
      height: 220,
      scales: { x: { time: false }, n: {}, pct: { range: [0, 100] } },
      axes: axes,
      series: series,
      cursor: { sync: { key: prefix } },
      plugins: [bandsPlugin(run.stages, run.steady), syncX(prefix)]
    };
    return make(id, opts, join(run.engine, range));
  }

  function jptChart(prefix, run) {
    var id = prefix + '-jpt';
    if (!run.jpt || !run.jpt.x.length) { note(document.getElementById(id), 'No per-request J/token.'); return; }
    var list = [run.jpt];
    var series = [xSeries('request (completion order)', 0, ''), ySeries('J/token', palette[0], 4, 'J/token', { scale: 'j', width: 1 })];
    if (run.cv && run.cv.x.length) {
      list.push(run.cv, { x: run.cv.x, y: run.cv.x.map(function () { return run.cv_max; }) });
      series.push(ySeries(run.cv.name, palette[3], 4, '', { scale: 'cv' }), ySeries('CV threshold', '#555', 3, '', { scale: 'cv', dash: [6, 4] }));
    }
    var steady = run.steady_first > 0 ? { name: 'steady state', start: run.steady_first, end: run.steady_last } : null;
    make(id, {
      title: 'Per-request J/token and rolling CV' + (run.simulated ? ', SIMULATED' : ''),
      height: 240,
      scales: { x: { time: false }, j: {}, cv: {} },
      axes: [{ label: 'successful formal request, completion order' }, { scale: 'j', label: 'J/token' }, { scale: 'cv', side: 1, label: 'CV', grid: { show: false } }],
      series: series,
      plugins: [bandsPlugin([], steady)]
    }, join(list));
  }

  function latencyCharts(prefix, run) {
    var grid = document.getElementById(prefix + '-latgrid');
    if (!grid) { return; }
    if (!run.latency || !run.latency.length) { note(grid, 'No latency values: no successful formal request.'); return; }
    run.latency.forEach(function (l) {
      var box = el('div', 'latbox');
      var id = prefix + '-lat-' + l.name.toLowerCase();
      var c = el('div', 'chart small');
      c.id = id;
      c.dataset.chart = 'latency';
      box.appendChild(c);
      box.appendChild(el('p', 'note', l.name + ': n = ' + l.n + '; p50 ' + num(l.p50, 2) + ' ms, p90 ' + num(l.p90, 2) + ' ms, p99 ' + num(l.p99, 2) + ' ms'));
      grid.appendChild(box);
      var marks = [{ name: 'p50', x: l.p50, text: num(l.p50, 2) }, { name: 'p90', x: l.p90, text: num(l.p90, 2) }, { name: 'p99', x: l.p99, text: num(l.p99, 2) }];
      make(id, {
        title: l.name + ' CDF (ms)' + (run.simulated ? ', SIMULATED' : ''),
        height: 220,
        scales: { x: { time: false }, y: { range: [0, 1] } },
        axes: [{ label: l.unit }, { label: 'fraction' }],
        series: [xSeries(l.name, 3, l.unit), ySeries('fraction of requests ≤', palette[2], 3, '')],
        plugins: [markersPlugin(marks)]
      }, [l.x, l.y]);
    });
  }

  // Tables: sortable by a click on a column's header; paged when long.
  function cellValue(v) {
    if (v === null || v === undefined) { return ''; }
    if (typeof v === 'boolean') { return v ? 'yes' : 'NO'; }
    if (typeof v === 'number' && !Number.isInteger(v)) { return v.toFixed(3); }
    return String(v);
  }

  function compareValues(a, b) {
    var na = a === null || a === undefined || a === '', nb = b === null || b === undefined || b === '';
    if (na || nb) { return na === nb ? 0 : (na ? 1 : -1); }
    if (typeof a === 'number' && typeof b === 'number') { return a - b; }
    var fa = parseFloat(a), fb = parseFloat(b);
    if (!isNaN(fa) && !isNaN(fb) && String(fa) === String(a).trim() && String(fb) === String(b).trim()) { return fa - fb; }
    return String(a).localeCompare(String(b));
  }

  function requestTable(prefix, run) {
    var box = document.getElementById(prefix + '-reqs');
    var t = run.requests;
    if (!box || !t) { return; }
    if (!t.rows || !t.rows.length) { note(box, 'No formal requests.'); return; }
    var rows = t.rows.slice(), page = 0, per = 50, sortCol = -1, dir = 1;
    var info = el('p', 'note');
    var table = el('table', 'reqs');
    var thead = el('thead'), tbody = el('tbody'), hr = el('tr');
    t.columns.forEach(function (c, i) {
      var th = el('th', 'sort', c);
      th.addEventListener('click', function () {
        dir = sortCol === i ? -dir : 1;
        sortCol = i;
        rows.sort(function (a, b) { return dir * compareValues(a[i], b[i]); });
        page = 0;
        draw();
      });
      hr.appendChild(th);
    });
    thead.appendChild(hr);
    table.appendChild(thead);
    table.appendChild(tbody);
    var nav = el('div', 'pager');
    var prev = el('button', '', '‹ previous'), next = el('button', '', 'next ›');
    prev.addEventListener('click', function () { if (page > 0) { page--; draw(); } });
    next.addEventListener('click', function () { if ((page + 1) * per < rows.length) { page++; draw(); } });
    nav.appendChild(prev);
    nav.appendChild(info);
    nav.appendChild(next);
    function draw() {
      tbody.textContent = '';
      rows.slice(page * per, (page + 1) * per).forEach(function (r) {
        var tr = el('tr');
        if (r[7] === false) { tr.className = 'fail'; }
        r.forEach(function (v) { tr.appendChild(el('td', typeof v === 'number' ? 'num' : '', cellValue(v))); });
        tbody.appendChild(tr);
      });
      var pages = Math.max(1, Math.ceil(rows.length / per));
      info.textContent = rows.length + ' formal requests; page ' + (page + 1) + ' of ' + pages + (sortCol >= 0 ? '; sorted by ' + t.columns[sortCol] + (dir > 0 ? ' ↑' : ' ↓') : '');
    }
    box.appendChild(nav);
    box.appendChild(table);
    draw();
  }

  function sortableTables() {
    Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
      var body = table.tBodies[0];
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
        th.classList.add('sort');
        var dir = 1;
        th.addEventListener('click', function () {
          var rows = Array.prototype.slice.call(body.rows);
          rows.sort(function (a, b) { return dir * compareValues(a.cells[i].textContent.replace(/^\[|\]$/g, ''), b.cells[i].textContent.replace(/^\[|\]$/g, '')); });
          dir = -dir;
          rows.forEach(function (r) { body.appendChild(r); });
        });
      });
    });
  }

  // fromZero is a scale that starts at zero and ends a little above the
  // highest value (and extra, the SLO's bound), so that two close points
  // read as close and ticks never crowd.
  function fromZero(extra) {
    return function (u, lo, hi) {
      var top = Math.max(hi || 0, extra || 0);
      return [0, top > 0 ? top * 1.1 : 1];
    };
  }

  // pointsPlugin writes each point's label (its load) beside it, rings
  // the chosen run's point, and draws the SLO's bound as a dashed
  // vertical line; the node records what it drew (data-labels, data-slo).
  function pointsPlugin(fr, node) {
    return {
      hooks: {
        draw: function (u) {
          var ctx = u.ctx, r = uPlot.pxRatio || 1, placed = [], n = 0;
          ctx.save();
          ctx.font = (11 * r) + 'px system-ui, sans-serif';
          ctx.textBaseline = 'middle';
          if (fr.bound !== undefined && fr.bound !== null) {
            var bx = u.valToPos(fr.bound, 'x', true);
            ctx.strokeStyle = '#a40000';
            ctx.setLineDash([6 * r, 4 * r]);
            ctx.lineWidth = 1.5 * r;
            ctx.beginPath();
            ctx.moveTo(bx, u.bbox.top);
            ctx.lineTo(bx, u.bbox.top + u.bbox.height);
            ctx.stroke();
            ctx.setLineDash([]);
            ctx.fillStyle = '#a40000';
            ctx.textAlign = 'right';
            ctx.fillText(fr.bound_label || 'SLO', bx - 4 * r, u.bbox.top + 10 * r);
            node.dataset.slo = String(fr.bound);
          }
          ctx.textAlign = 'left';
          var texts = [];
          // A label goes to the first place beside its point that
          // overlaps no label drawn before (right and above, right and
          // below, left and above, left and below), else below the
          // labels in its way.
          var free = function (b) {
            return !placed.some(function (p) { return b.x < p.x + p.w && p.x < b.x + b.w && b.y < p.y + p.h && p.y < b.y + b.h; });
          };
          fr.series.forEach(function (s, i) {
            ctx.fillStyle = palette[i % palette.length];
            s.x.forEach(function (x, j) {
              var px = u.valToPos(x, 'x', true), py = u.valToPos(s.y[j], 'y', true);
              var label = (s.labels || [])[j];
              if (fr.best && s.runs[j] === fr.best) {
                ctx.strokeStyle = '#2a6f2a';
                ctx.lineWidth = 2.5 * r;
                ctx.beginPath();
                ctx.arc(px, py, 9 * r, 0, 2 * Math.PI);
                ctx.stroke();
                node.dataset.best = fr.best;
                if (label) { node.dataset.bestLabel = label; }
              }
              if (!label) { return; }
              var w = ctx.measureText(label).width, h = 12 * r, g = 7 * r;
              var tries = [[px + g, py - 10 * r], [px + g, py + 10 * r], [px - g - w, py - 10 * r], [px - g - w, py + 10 * r]];
              var at = null;
              for (var k = 0; k < tries.length && !at; k++) {
                var b = { x: tries[k][0], y: tries[k][1] - h / 2, w: w, h: h };
                if (free(b)) { at = b; }
              }
              if (!at) {
                at = { x: px + g, y: py - 10 * r - h / 2, w: w, h: h };
                while (!free(at)) { at.y += h; }
              }
              placed.push(at);
              ctx.fillText(label, at.x, at.y + h / 2);
              texts.push(label);
              n++;
            });
          });
          node.dataset.labelTexts = JSON.stringify(texts);
          node.dataset.labels = String(n);
          ctx.restore();
        }
      }
    };
  }

  // frontierChart draws points per series (a configuration's load
  // points, joined in x order; an asiai engine) into the element id, both
  // axes from zero.
  function frontierChart(id, fr, unit) {
    var node = document.getElementById(id);
    if (!node) { return; }
    if (!fr || !fr.series || !fr.series.length) { node.style.display = 'none'; return; }
    var series = [xSeries(fr.x_name, 2, '')];
    fr.series.forEach(function (s, i) {
      series.push(ySeries(s.name, palette[i % palette.length], 4, unit, { points: { show: true, size: 9 }, width: 1.5 }));
    });
    make(id, {
      title: fr.y_name + ' vs ' + fr.x_name,
      height: 320,
      scales: { x: { time: false, range: fromZero(fr.bound) }, y: { range: fromZero(0) } },
      axes: [{ label: fr.x_name }, { label: fr.y_name }],
      plugins: [pointsPlugin(fr, node)],
      series: series
    }, join(fr.series));
  }

  function runAnchor(section) { return section.id; }

  try {
    var sections = document.querySelectorAll('section.run:not(.brief)');
    (JB.runs || []).forEach(function (run, i) {
      var sec = sections[i];
      if (!sec) { return; }
      var prefix = runAnchor(sec);
      var range = timeRange(run);
      powerChart(prefix, run, range);
      engineChart(prefix, run, range);
      jptChart(prefix, run);
      latencyCharts(prefix, run);
      requestTable(prefix, run);
    });
    frontierChart('frontier-chart', JB.frontier, 'J/token');
    frontierChart('asiai-chart', JB.asiai, 'W');
    sortableTables();
  } finally {
    document.body.dataset.ready = '1';
  }
})();

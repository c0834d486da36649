// forestd status page: polls /api/status once a second and updates the
// page in place. Data strings go into the page through textContent only;
// charts are SVG documents drawn by the daemon (html/template, escaped),
// parsed as image/svg+xml and swapped in when their part of the status
// changed.
(function () {
  'use strict';
  var POLL_MS = 1000;
  var chartRev = {};
  var charts = {
    importances: 'model', history: 'history', rows: 'traffic', latency: 'traffic', lag: 'traffic',
    pvalues: 'analysis', groups: 'analysis'
  };

  function byId(id) { return document.getElementById(id); }

  function text(id, v) {
    var e = byId(id);
    if (e) { e.textContent = (v === null || v === undefined || v === '') ? '–' : String(v); }
  }

  function num(v, digits) {
    if (v === null || v === undefined || typeof v !== 'number' || !isFinite(v)) { return '–'; }
    if (v !== 0 && (Math.abs(v) < 0.001 || Math.abs(v) >= 1e6)) { return v.toExponential(2); }
    return String(Number(v.toPrecision(digits || 4)));
  }

  function ms(v) { return (v === null || v === undefined) ? '–' : num(v * 1000, 3); }

  function time(s) {
    if (!s) { return '–'; }
    var d = new Date(s);
    return isNaN(d.getTime()) ? '–' : d.toLocaleTimeString();
  }

  function fillTable(id, rows) {
    var body = byId(id).tBodies[0];
    var trs = [];
    rows.forEach(function (cells) {
      var tr = document.createElement('tr');
      cells.forEach(function (c) {
        var td = document.createElement('td');
        if (c && typeof c === 'object') {
          td.textContent = c.text;
          td.className = c.cls;
        } else {
          td.textContent = c;
        }
        tr.appendChild(td);
      });
      trs.push(tr);
    });
    body.replaceChildren.apply(body, trs);
  }

  function loadChart(name, rev) {
    if (chartRev[name] === rev) { return; }
    chartRev[name] = rev;
    fetch('/status/chart/' + name + '.svg?rev=' + encodeURIComponent(rev), { cache: 'no-store' })
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.text(); })
      .then(function (svg) {
        var doc = new DOMParser().parseFromString(svg, 'image/svg+xml');
        if (doc.getElementsByTagName('parsererror').length > 0) { throw new Error('bad svg'); }
        var box = byId('chart-' + name);
        box.replaceChildren(document.importNode(doc.documentElement, true));
      })
      .catch(function () { chartRev[name] = null; });
  }

  function showModel(m) {
    if (!m) { return; }
    text('model-version', m.version);
    text('model-id', m.id);
    text('model-kind', m.kind);
    text('model-task', m.task);
    text('model-label', m.label);
    text('model-trees', m.trees);
    text('model-features', m.features ? m.features.length : null);
    text('model-trained-at', time(m.trained_at));
    text('model-training-rows', m.training_rows);
    text('model-live-at', time(m.live_at));
    text('model-origin', m.origin);
    var oob = m.oob || {};
    var reg = m.task === 'regression';
    text('model-oob-error-name', reg ? 'OOB MSE' : 'OOB error');
    text('model-oob-error', m.oob ? num(oob.error) : null);
    text('model-oob-rows', m.oob ? oob.rows : null);
    text('model-strength', m.oob ? num(oob.strength) : null);
    text('model-correlation', m.oob ? num(oob.correlation) : null);
    text('model-r2', m.oob ? num(oob.r2) : null);
    Array.prototype.forEach.call(document.querySelectorAll('tr.clf'), function (e) { e.classList.toggle('hidden', reg); });
    Array.prototype.forEach.call(document.querySelectorAll('tr.reg'), function (e) { e.classList.toggle('hidden', !reg); });
    text('importance-kind', m.importance_kind);
  }

  function showTraffic(t) {
    var s = t.samples.length ? t.samples[t.samples.length - 1] : null;
    if (!s) { return; }
    text('rows-in', num(s.rows_in_per_second));
    text('rows-out', num(s.rows_out_per_second));
    text('batch-lat', ms(s.batch_p50_seconds) + ' / ' + ms(s.batch_p99_seconds));
    text('e2e-lat', ms(s.end_to_end_p50_seconds) + ' / ' + ms(s.end_to_end_p99_seconds));
    var lag = 0;
    Object.keys(s.lag || {}).forEach(function (k) { lag += s.lag[k]; });
    text('lag-total', lag);
  }

  function showDeadLetters(d) {
    text('dl-total', d.total);
    fillTable('dl-reasons', Object.keys(d.by_reason).sort().map(function (k) { return [k, String(d.by_reason[k])]; }));
    fillTable('dl-last', d.last.map(function (x) {
      return [time(x.at), x.source, x.stage, { text: x.reason, cls: 'reason' }];
    }));
  }

  function showAnalysis(a) {
    if (!a) { return; }
    text('analysis-info', '#' + a.seq + ' at ' + time(a.at) + ': ' + a.method + ' with ' + a.stat + ' on ' + a.rows +
      ' rows, α = ' + a.alpha + ', ' + (a.groups ? a.groups.length : 0) + ' group(s)');
    var marg = (a.features || []).filter(function (f) { return f.group < 0; });
    fillTable('marginal', marg.map(function (f) { return [f.name, num(f.statistic), num(f.p_value), num(f.p_adjusted)]; }));
  }

  function show(s) {
    var badge = byId('ready');
    badge.textContent = s.ready ? 'ready' : ('not ready: ' + (s.not_ready || ''));
    badge.className = 'badge ' + (s.ready ? 'ok' : 'wait');
    text('updated', time(s.now));
    showModel(s.model);
    showTraffic(s.traffic);
    showDeadLetters(s.dead_letters);
    showAnalysis(s.analysis);
    Object.keys(charts).forEach(function (name) {
      loadChart(name, charts[name] + s.revisions[charts[name]]);
    });
    document.body.setAttribute('data-model-revision', String(s.revisions.model));
  }

  function poll() {
    fetch('/api/status', { cache: 'no-store' })
      .then(function (r) { return r.json(); })
      .then(show)
      .catch(function () {
        var badge = byId('ready');
        badge.textContent = 'daemon unreachable';
        badge.className = 'badge down';
      })
      .then(function () { setTimeout(poll, POLL_MS); });
  }

  document.addEventListener('DOMContentLoaded', poll);
}());

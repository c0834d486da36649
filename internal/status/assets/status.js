// forestd status page: polls /api/status once a second and updates the
// page in place. After the first (whole) document it sends back the
// document's instance and the revisions of the parts it holds: the daemon
// then leaves out the parts that did not change (listed in "unchanged"),
// which the page keeps and does not redraw, and sends only the traffic
// samples after the held one, so a poll costs the same whatever the size
// of the model and the analysis. Data strings go into the page through
// textContent only; charts are SVG documents drawn by the daemon
// (html/template, escaped), parsed as image/svg+xml and swapped in when
// their part of the status changed. Long lists are cut to MAX_ROWS rows
// with a note of how many more there are.
(function () {
  'use strict';
  var POLL_MS = 1000;
  var MAX_ROWS = 50;
  // the parts the daemon leaves out when they did not change
  var PARTS = ['model', 'history', 'dead_letters', 'analysis', 'drift'];
  // held: the instance of the documents, the parts and their revisions
  // and the traffic revision; null before the first document
  var held = null;
  var chartRev = {};
  var charts = {
    importances: 'model', history: 'history', rows: 'traffic', latency: 'traffic', lag: 'traffic',
    pvalues: 'analysis', groups: 'analysis', drift: 'drift'
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

  // fillTable puts rows (arrays of cells: text, or {text, cls}) into the
  // table's body, the first MAX_ROWS of them and a note of the rest.
  function fillTable(id, rows) {
    var table = byId(id);
    var body = table.tBodies[0];
    var trs = [];
    rows.slice(0, MAX_ROWS).forEach(function (cells) {
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
    if (rows.length > MAX_ROWS) {
      var tr = document.createElement('tr');
      var td = document.createElement('td');
      td.colSpan = table.tHead ? table.tHead.rows[0].cells.length : 1;
      td.className = 'more';
      td.textContent = '… and ' + (rows.length - MAX_ROWS) + ' more (all in /api/status)';
      tr.appendChild(td);
      trs.push(tr);
    }
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
    m = m || {}; // none (a restarted daemon before its first): dashes
    text('model-version', m.version);
    text('model-id', m.id);
    text('model-kind', m.kind);
    text('model-task', m.task);
    text('model-label', m.label);
    text('model-trees', m.trees);
    text('model-features', m.features ? m.features.length : null);
    text('model-classes', m.classes ? m.classes.length : null);
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
    byId('importance-kind').textContent = m.importance_kind || '';
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
    if (!a) {
      text('analysis-info', 'none yet');
      fillTable('marginal', []);
      return;
    }
    text('analysis-info', '#' + a.seq + ' at ' + time(a.at) + ': ' + a.method + ' with ' + a.stat + ' on ' + a.rows +
      ' rows, α = ' + a.alpha + ', ' + (a.groups ? a.groups.length : 0) + ' group(s)');
    var marg = (a.features || []).filter(function (f) { return f.group < 0; });
    fillTable('marginal', marg.map(function (f) { return [f.name, num(f.statistic), num(f.p_value), num(f.p_adjusted)]; }));
  }

  // showDrift shows the drift stage's counts and its last alarm: when,
  // on which model version and window, and each feature's test (those
  // that drifted first).
  function showDrift(d) {
    if (!d) {
      text('drift-info', 'no test yet');
      text('drift-alarm', 'none');
      fillTable('drift-features', []);
      return;
    }
    text('drift-info', d.tests + ' test(s), ' + d.alarms + ' alarm(s)');
    var a = d.last_alarm;
    if (!a) {
      text('drift-alarm', 'none');
      fillTable('drift-features', []);
      return;
    }
    var moved = a.features.filter(function (f) { return f.drift; }).map(function (f) { return f.name; });
    if (a.joint && a.joint.drift) { moved.push('joint'); }
    text('drift-alarm', time(a.at) + ', model version ' + a.model_version + ', ' + a.window_rows + ' rows: ' + moved.join(', '));
    var rows = a.features.slice();
    if (a.joint) { rows.push(a.joint); }
    rows.sort(function (x, y) { return (y.drift ? 1 : 0) - (x.drift ? 1 : 0); });
    fillTable('drift-features', rows.map(function (f) {
      return [f.name, num(f.p_value), num(f.p_adjusted), f.drift ? { text: 'drift', cls: 'bad' } : 'no'];
    }));
  }

  // statusURL asks for the whole document first (and after an error),
  // then for what changed since the held parts.
  function statusURL() {
    if (!held) { return '/api/status'; }
    var q = ['instance=' + encodeURIComponent(held.instance), 'traffic=' + held.traffic];
    PARTS.forEach(function (p) {
      if (p in held.rev) { q.push(p + '=' + held.rev[p]); }
    });
    return '/api/status?' + q.join('&');
  }

  // merge fills the parts s leaves out from the held ones, holds the parts
  // s carries, and returns which of them changed (null when s leaves out a
  // part the page does not hold: then it asks for the whole document).
  function merge(s) {
    if (!held || held.instance !== s.instance) {
      held = { instance: s.instance, rev: {}, data: {}, traffic: 0 };
    }
    var unchanged = s.unchanged || [];
    var changed = {};
    for (var i = 0; i < PARTS.length; i++) {
      var p = PARTS[i];
      if (unchanged.indexOf(p) >= 0) {
        if (!(p in held.data)) { held = null; return null; }
        s[p] = held.data[p];
      } else {
        held.data[p] = s[p];
        held.rev[p] = s.revisions[p];
        changed[p] = true;
      }
    }
    held.traffic = s.revisions.traffic;
    return changed;
  }

  function show(s) {
    var changed = merge(s);
    if (!changed) { return; }
    var badge = byId('ready');
    badge.textContent = s.ready ? 'ready' : ('not ready: ' + (s.not_ready || ''));
    badge.className = 'badge ' + (s.ready ? 'ok' : 'wait');
    text('updated', time(s.now));
    if (changed.model) { showModel(s.model); }
    showTraffic(s.traffic);
    if (changed.dead_letters) { showDeadLetters(s.dead_letters); }
    if (changed.analysis) { showAnalysis(s.analysis); }
    if (changed.drift) { showDrift(s.drift); }
    Object.keys(charts).forEach(function (name) {
      // revisions count within one instance (a restarted daemon starts over)
      loadChart(name, s.instance + '.' + charts[name] + s.revisions[charts[name]]);
    });
    document.body.setAttribute('data-model-revision', String(s.revisions.model));
  }

  function poll() {
    fetch(statusURL(), { cache: 'no-store' })
      .then(function (r) {
        if (!r.ok) { throw new Error('/api/status: ' + r.status); }
        return r.json();
      })
      .then(show)
      .catch(function () {
        held = null; // ask for the whole document next time
        var badge = byId('ready');
        badge.textContent = 'daemon unreachable';
        badge.className = 'badge down';
      })
      .then(function () { setTimeout(poll, POLL_MS); });
  }

  document.addEventListener('DOMContentLoaded', poll);
}());

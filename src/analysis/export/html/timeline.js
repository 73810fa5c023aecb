/* timeline.js — the timeline of `tracery export --format html`: reads the
 * JSON chunks the export wrote after this script (src/analysis/export/html_export.hpp
 * describes them), then draws the tracks on a canvas: CPUs (the thread each
 * runs, from sched_switch; wake-ups), processes and their threads (their
 * states from the scheduler's events, user events, spans, system calls),
 * counters. The user's processes come first (those with user events, then
 * those named with --focus, then those the session tracked), expanded; the
 * others, the busiest first, are
 * folded into a header that sums up their threads (how many run, how many
 * events). Zoom and pan
 * with the wheel, a drag or the keys; "fit" shows the user's processes'
 * activity; a click shows an event's fields with its time as `tracery view`
 * prints it, and on a thread state, the wake-up that made it runnable (an
 * arrow from the waker); the search box finds events by name or field value.
 *
 * Stays responsive on millions of events: each track keeps its events' times
 * sorted, and a frame only visits what lands on a pixel: a binary search
 * finds the first event of each occupied pixel column, so a zoomed-out track
 * costs its width in pixels times log(events), not its events.
 *
 * No library and no network: the file opens from disk. window.tracery holds
 * the state the tests read (tests/html_test.py). */
(function () {
  'use strict';

  const LABEL_W = 220;   // the track names' column, in CSS px
  const AXIS_H = 26;     // the time axis
  const ROW_H = 18;      // a slice's depth
  const INSTANT_H = 16;  // the row of a track's instants
  const COUNTER_H = 34;
  const TRACK_PAD = 3;
  const STATE_H = 12;    // a thread's states
  const SUMMARY_H = 16;  // a process header's summary of its threads
  const KIND_PROCESS = 1, KIND_THREAD = 2, KIND_SYSCALLS = 3, KIND_CPU = 4, KIND_COUNTER = 5;
  const KIND_STATE = 8;  // a thread's states (the page's own kind: html_export.cpp)
  // Thread states, numbered as html_export.cpp writes them (none after a
  // thread's last switch out); colours after
  // Perfetto's (running dark green, runnable light green, uninterruptible
  // orange) and Trace Compass's.
  const STATES = [
    { name: 'Running', color: '#2e7d32' },
    { name: 'Runnable', color: '#9ccc65' },
    { name: 'Sleeping', color: '#d5dde8' },
    { name: 'Uninterruptible', color: '#ef6c00' },
    { name: 'Stopped', color: '#8e44ad' },
    { name: 'Idle', color: '#eef1f5' },
  ];
  const RUNNING = 0, RUNNABLE = 1;
  const MARKER = '#1f4fbf';  // a user event's marker

  // ---- the data ----

  const model = {
    origin: 0n,      // ns on the export clock of time 0
    clock: 0,
    realtime: 0n,    // CLOCK_REALTIME - the export clock, ns
    focus: [],       // --focus: pids and names
    tracked: [],     // the pids the traces' sessions tracked (track --pid)
    total: -1,       // the events the export wrote, as it reported them
    discarded: 0,
    strs: [],
    kinds: [],       // {name, cat, phase, fields, types}
    tracks: [],      // by id
    events: 0,
    start: Infinity, // ns after origin
    end: -Infinity,
    complete: false,
  };

  function newTrack(id) {
    return {
      id: id, kind: 0, parent: -1, pid: 0, tid: 0, cpu: 0, name: '',
      last: 0, t: [], k: [], v: [],
      children: [], up: null, collapsed: false,
    };
  }

  function loadChunks() {
    const els = document.querySelectorAll('script.tracery-chunk');
    for (const el of els) {
      const c = JSON.parse(el.textContent);
      el.textContent = '';  // the text is no longer needed
      if (c.head) {
        model.origin = BigInt(c.head.origin);
        model.clock = c.head.clock;
        if (c.head.realtime) model.realtime = BigInt(c.head.realtime);
        if (c.head.focus) model.focus = c.head.focus.map(String);
        if (c.head.tracked) model.tracked = c.head.tracked.map(Number);
      }
      if (c.events !== undefined) { model.total = c.events; model.discarded = c.discarded || 0; }
      if (c.strs) for (const s of c.strs) model.strs.push(s);
      if (c.kinds) {
        for (const k of c.kinds)
          model.kinds.push({ name: k[0], cat: k[1], phase: k[2], fields: k[3], types: k[4] });
      }
      if (c.tracks) {
        for (const d of c.tracks) {
          const tr = model.tracks[d[0]] || (model.tracks[d[0]] = newTrack(d[0]));
          tr.kind = d[1]; tr.parent = d[2]; tr.pid = d[3]; tr.tid = d[4]; tr.cpu = d[5]; tr.name = d[6];
        }
      }
      for (const e of c.ev) {
        const tr = model.tracks[e[0]] || (model.tracks[e[0]] = newTrack(e[0]));
        const dt = e[1], ks = e[2], vs = e[3];
        let last = tr.last;
        for (let i = 0; i < dt.length; i++) {
          last += dt[i];
          tr.t.push(last);
          tr.k.push(ks[i]);
        }
        tr.last = last;
        for (let i = 0; i < vs.length; i++) tr.v.push(vs[i]);
        model.events += dt.length;
      }
      if (c.end) model.complete = true;
    }
    if (model.total < 0) model.total = model.events;  // a page cut short
    for (const tr of model.tracks) if (tr) prepare(tr);
    if (model.start > model.end) { model.start = 0; model.end = 1; }
    if (model.end === model.start) model.end = model.start + 1;
    tidTracks = new Map();
    for (const tr of model.tracks) if (tr && tr.kind === KIND_THREAD) tidTracks.set(tr.tid, tr);
  }

  function lowerBound(a, x, lo, hi) {
    lo = lo || 0;
    hi = hi === undefined ? a.length : hi;
    while (lo < hi) {
      const m = (lo + hi) >>> 1;
      if (a[m] < x) lo = m + 1; else hi = m;
    }
    return lo;
  }

  // Typed columns, sorted by time, and what a track draws: instants, slices
  // by depth, a CPU's running threads, a counter's values.
  function prepare(tr) {
    const n = tr.t.length;
    let t = Float64Array.from(tr.t), k = Int32Array.from(tr.k);
    const off = new Int32Array(n + 1);
    for (let i = 0; i < n; i++) {
      const kind = model.kinds[k[i]];
      off[i + 1] = off[i] + (kind ? kind.fields.length : 0);
    }
    let sorted = true;
    for (let i = 1; i < n && sorted; i++) if (t[i] < t[i - 1]) sorted = false;
    let order = null;
    if (!sorted) {  // a damaged or hostile trace: put the events in time order
      order = Int32Array.from({ length: n }, (_, i) => i).sort((a, b) => t[a] - t[b]);
      t = Float64Array.from(order, i => t[i]);
      k = Int32Array.from(order, i => k[i]);
    }
    tr.n = n;
    tr.t = t;
    tr.k = k;
    tr.off = order ? Int32Array.from(order, i => off[i]) : off;
    tr.order = order;
    if (n) {
      model.start = Math.min(model.start, t[0]);
      model.end = Math.max(model.end, t[n - 1]);
    }
    tr.first = Infinity;  // its activity: events after the state dump, running states
    tr.last = -Infinity;
    if (tr.kind === KIND_STATE) { prepareStates(tr); return; }
    const dump = kk => model.kinds[kk] && model.kinds[kk].name.startsWith('lttng_statedump');
    for (let i = 0; i < n; i++) if (!dump(k[i])) { tr.first = t[i]; break; }
    for (let i = n - 1; i >= 0; i--) if (!dump(k[i])) { tr.last = t[i]; break; }
    tr.user = false;  // has user events
    for (let i = 0; i < n && !tr.user; i++) if (model.kinds[k[i]] && model.kinds[k[i]].cat === 'ust') tr.user = true;
    const inst = [], stack = [], depths = [], segs = [], points = [];
    let lastSwitch = -1;
    for (let i = 0; i < n; i++) {
      const kind = model.kinds[k[i]];
      if (!kind) continue;
      if (kind.cat === 'sched' && kind.name === 'sched_switch') {
        if (lastSwitch >= 0) segs.push([lastSwitch, i]);
        lastSwitch = i;
      } else if (kind.cat === 'counter') {
        points.push(i);
      } else if (kind.phase === 1) {
        stack.push(i);
      } else if (kind.phase === 2 && stack.length) {
        const b = stack.pop();
        addSlice(depths, stack.length, t[b], t[i], b, i);
      } else {
        inst.push(i);
      }
    }
    while (stack.length) {  // begun, never ended: to the end of the trace
      const b = stack.pop();
      addSlice(depths, stack.length, t[b], Infinity, b, -1);
    }
    if (lastSwitch >= 0) segs.push([lastSwitch, -1]);
    tr.inst = Int32Array.from(inst);
    tr.instT = Float64Array.from(inst, i => t[i]);
    tr.depths = depths.map(d => ({
      start: Float64Array.from(d.start), end: Float64Array.from(d.end),
      b: Int32Array.from(d.b), e: Int32Array.from(d.e),
    }));
    // a CPU's threads: from each switch to the next, the thread switched in
    const running = segs.filter(s => value(tr, s[0], 5) !== 0);
    tr.segs = running.length ? {
      start: Float64Array.from(running, s => t[s[0]]),
      end: Float64Array.from(running, s => (s[1] < 0 ? Infinity : t[s[1]])),
      b: Int32Array.from(running, s => s[0]),
      e: Int32Array.from(running, s => s[1]),
    } : null;
    tr.points = Int32Array.from(points);
    tr.pointT = Float64Array.from(points, i => t[i]);
    tr.pointV = Float64Array.from(points, i => Number(value(tr, i, 0)));
    if (points.length) {
      let lo = Infinity, hi = -Infinity;
      for (const v of tr.pointV) if (isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
      tr.vmin = lo; tr.vmax = hi;
    }
  }

  // A state track: an interval per event [state, duration, CPU, waker].
  function prepareStates(tr) {
    const n = tr.n;
    tr.inst = new Int32Array(0); tr.instT = new Float64Array(0); tr.depths = [];
    tr.segs = null; tr.points = new Int32Array(0); tr.pointT = new Float64Array(0);
    const st = { start: tr.t, end: new Float64Array(n), state: new Int8Array(n), b: Int32Array.from({ length: n }, (_, i) => i),
                 run: new Float64Array(n + 1) };  // run[i]: the time running before interval i
    let last = -Infinity;
    for (let i = 0; i < n; i++) {
      st.state[i] = Number(value(tr, i, 0));
      const dur = Math.max(0, Number(value(tr, i, 1)));
      st.run[i + 1] = st.run[i] + (st.state[i] === RUNNING ? dur : 0);
      // kept in order for the binary searches, as addSlice does
      last = Math.max(last, tr.t[i] + Number(value(tr, i, 1)));
      st.end[i] = last;
      if (st.state[i] === RUNNING) { tr.first = Math.min(tr.first, tr.t[i]); tr.last = Math.max(tr.last, st.end[i]); }
    }
    tr.states = st;
    if (n) model.end = Math.max(model.end, st.end[n - 1]);
  }

  function addSlice(depths, d, start, end, b, e) {
    const l = depths[d] || (depths[d] = { start: [], end: [], b: [], e: [] });
    // slices of one depth follow each other: keep it so for the binary searches
    const last = l.end.length ? l.end[l.end.length - 1] : -Infinity;
    l.start.push(start);
    l.end.push(Math.max(end, last));
    l.b.push(b);
    l.e.push(e);
  }

  // The j-th field's raw value of event i of track tr.
  function value(tr, i, j) {
    return tr.v[tr.off[i] + j];
  }

  function text(kind, j, v) {
    const ty = kind.types[j];
    if ((ty === 's' || ty === 'e' || ty === 'j') && typeof v === 'number') return model.strs[v];
    return String(v);
  }

  function fieldsOf(tr, i) {
    const kind = model.kinds[tr.k[i]];
    const out = [];
    for (let j = 0; j < kind.fields.length; j++) out.push([kind.fields[j], text(kind, j, value(tr, i, j))]);
    return out;
  }

  // ---- the track list ----

  let rows = [];  // {track, y, h, label, indent, parts}
  let tidTracks = new Map();  // tid -> its thread's track
  let laidOut = false;

  function trackHas(tr) {
    return tr.n > 0 || !!(tr.stateTrack && tr.stateTrack.n) || tr.children.some(trackHas);
  }

  function anyTrack(tr, f) {
    return f(tr) || tr.children.some(c => anyTrack(c, f));
  }

  // A process (or a root track) the user cares about: 1 with user events,
  // 2 named with --focus, 3 tracked by its session, 0 none of those.
  function interest(tr) {
    if (anyTrack(tr, c => c.user)) return 1;
    if (tr.kind === KIND_CPU || tr.kind === KIND_COUNTER) return 0;
    const names = [String(tr.pid), tr.name];
    for (const c of tr.children) if (c.kind === KIND_THREAD) names.push(c.name);
    if (model.focus.some(f => names.includes(f))) return 2;
    if (model.tracked.includes(tr.pid)) return 3;
    return 0;
  }

  function layout() {
    const all = model.tracks.filter(Boolean);
    for (const tr of all) { tr.children = []; tr.stateTrack = null; }
    const roots = [];
    const processes = new Map();
    for (const tr of all) if (tr.kind === KIND_PROCESS) processes.set(tr.pid, tr);
    for (const tr of all) {
      // a thread belongs to its process (the export gives its pid, no parent)
      const p = tr.parent >= 0 ? model.tracks[tr.parent]
        : tr.kind === KIND_THREAD ? processes.get(tr.pid) : null;
      tr.up = p || null;
      if (tr.kind === KIND_STATE && p) p.stateTrack = tr;  // drawn in its thread's row
      else if (p) p.children.push(tr); else roots.push(tr);
    }
    // the user's processes first, then the CPUs, then the other processes,
    // folded, the busiest first
    const ran = tr => (tr.stateTrack ? tr.stateTrack.states.run[tr.stateTrack.n] : 0) +
      tr.children.reduce((sum, c) => sum + ran(c), 0);
    for (const tr of roots) {
      tr.interest = interest(tr);
      tr.busy = ran(tr);
      if (!laidOut && tr.children.length) tr.collapsed = tr.interest === 0;
    }
    laidOut = true;
    const rank = tr => (tr.interest ? tr.interest - 1 : tr.kind === KIND_CPU ? 3 : tr.kind === KIND_COUNTER ? 6 : 4);
    const cmp = (a, b) => rank(a) - rank(b) || (b.busy || 0) - (a.busy || 0) ||
      (a.kind === KIND_CPU ? a.cpu - b.cpu : 0) ||
      (a.kind === KIND_THREAD ? (a.tid === a.pid ? -1 : 0) - (b.tid === b.pid ? -1 : 0) || a.tid - b.tid : 0) ||
      a.pid - b.pid || a.id - b.id;
    rows = [];
    let y = 0;
    const visit = (tr, indent) => {
      if (!trackHas(tr)) return;
      const parts = [];
      let h = TRACK_PAD;
      if (tr.kind === KIND_PROCESS || (indent === 0 && tr.children.length)) { parts.push({ what: 'summary', y: h }); h += SUMMARY_H; }
      if (tr.stateTrack) { parts.push({ what: 'states', y: h }); h += STATE_H + 2; }
      if (tr.segs) { parts.push({ what: 'segs', y: h }); h += ROW_H; }
      tr.depths.forEach((d, depth) => { parts.push({ what: 'slices', depth: depth, y: h }); h += ROW_H; });
      if (tr.inst.length) { parts.push({ what: 'inst', y: h }); h += INSTANT_H; }
      if (tr.points.length) { parts.push({ what: 'counter', y: h }); h += COUNTER_H; }
      h = Math.max(h + TRACK_PAD, 20);
      rows.push({ track: tr, y: y, h: h, label: labelOf(tr), indent: indent, parts: parts });
      y += h;
      if (tr.collapsed) return;
      tr.children.sort(cmp);
      for (const c of tr.children) visit(c, indent + 1);
    };
    roots.sort(cmp);
    for (const tr of roots) visit(tr, 0);
    view.contentH = y;
  }

  function labelOf(tr) {
    switch (tr.kind) {
      case KIND_PROCESS: {  // unnamed: after its main thread, else another, else "process"
        const main = tr.children.find(c => c.kind === KIND_THREAD && c.tid === tr.pid && c.name) ||
          tr.children.find(c => c.kind === KIND_THREAD && c.name);
        const threads = tr.children.filter(c => c.kind === KIND_THREAD).length;
        return (tr.name || (main ? main.name : 'process')) + ' ' + tr.pid + (threads > 1 ? '  · ' + threads + ' threads' : '');
      }
      case KIND_THREAD: return (tr.name || 'thread') + ' ' + tr.tid;
      case KIND_SYSCALLS: return 'system calls';
      case KIND_CPU: return 'CPU ' + tr.cpu;
      default: return tr.name || 'track ' + tr.id;
    }
  }

  // ---- the view ----

  const view = { t0: 0, t1: 1, scrollY: 0, contentH: 0, w: 0, h: 0, dpr: 1 };
  let canvas, ctx, details, results, info, searchBox;
  let selected = null;      // {track, i (event), slice: {start, end, b, e} or null}
  let matches = [];         // [{track, i}]
  let lastQuery = '';
  let current = -1;         // the match shown
  let frameAsked = false;

  function plotW() { return Math.max(1, view.w - LABEL_W); }
  function nsPerPx() { return (view.t1 - view.t0) / plotW(); }
  function xOf(t) { return LABEL_W + (t - view.t0) / nsPerPx(); }
  function tOf(x) { return view.t0 + (x - LABEL_W) * nsPerPx(); }

  function redraw() {
    if (frameAsked) return;
    frameAsked = true;
    requestAnimationFrame(() => { frameAsked = false; draw(); });
  }

  function colorOf(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    return 'hsl(' + ((h >>> 0) % 360) + ',55%,' + (52 + ((h >>> 9) % 16)) + '%)';
  }

  function fmtDur(ns) {
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toPrecision(4) + ' s';
    if (a >= 1e6) return (ns / 1e6).toPrecision(4) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toPrecision(4) + ' µs';
    return Math.round(ns) + ' ns';
  }

  function draw() {
    const c = ctx;
    c.setTransform(view.dpr, 0, 0, view.dpr, 0, 0);
    c.fillStyle = '#fff';
    c.fillRect(0, 0, view.w, view.h);
    c.font = '12px system-ui, sans-serif';
    c.textBaseline = 'middle';
    const top = AXIS_H - view.scrollY;
    drawn = 0;
    for (let r = 0; r < rows.length; r++) {
      const row = rows[r];
      const y = top + row.y;
      if (y + row.h < AXIS_H || y > view.h) continue;
      c.fillStyle = r % 2 ? '#f7f8fa' : '#fff';
      c.fillRect(0, y, view.w, row.h);
      c.save();
      c.beginPath();
      c.rect(LABEL_W, Math.max(y, AXIS_H), plotW(), row.h);
      c.clip();
      for (const part of row.parts) drawPart(row.track, part, y + part.y);
      c.restore();
      drawLabel(row, y);
      c.strokeStyle = '#e6e9ee';
      c.beginPath();
      c.moveTo(0, y + row.h - 0.5);
      c.lineTo(view.w, y + row.h - 0.5);
      c.stroke();
    }
    drawAxis();
    drawSelection(top);
  }

  let drawn = 0;  // marks drawn by the last frame (tests read it)

  function drawLabel(row, y) {
    const c = ctx;
    c.fillStyle = '#eef1f5';
    c.fillRect(0, y, LABEL_W, row.h);
    c.fillStyle = row.track.kind === KIND_PROCESS || row.track.kind === KIND_CPU ? '#1d2330' : '#3d4556';
    const x = 6 + row.indent * 12;
    let label = row.label;
    if (row.track.children.length) label = (row.track.collapsed ? '▸ ' : '▾ ') + label;
    c.save();
    c.beginPath();
    c.rect(0, y, LABEL_W - 4, row.h);
    c.clip();
    c.fillText(label, x, y + Math.min(row.h / 2, 11));
    c.restore();
    c.strokeStyle = '#d5d9e0';
    c.beginPath();
    c.moveTo(LABEL_W - 0.5, y);
    c.lineTo(LABEL_W - 0.5, y + row.h);
    c.stroke();
  }

  function drawPart(tr, part, y) {
    if (part.what === 'summary') drawSummary(tr, y);
    else if (part.what === 'states') drawStates(tr.stateTrack, y);
    else if (part.what === 'segs') drawSlices(tr, tr.segs, y, true);
    else if (part.what === 'slices') drawSlices(tr, tr.depths[part.depth], y, false);
    else if (part.what === 'inst') drawInstants(tr, y);
    else drawCounter(tr, y);
  }

  // Slices of one depth: the wide ones drawn with their names, those under a
  // pixel gathered into one mark per pixel column (the next found by a
  // binary search on the starts).
  function drawSlices(tr, d, y, isCpu) {
    const c = ctx, npp = nsPerPx(), W = view.w;
    let i = lowerBound(d.end, view.t0);
    const n = d.start.length;
    while (i < n) {
      const s = d.start[i];
      if (s > view.t1) break;
      const x0 = xOf(s), x1 = Math.min(xOf(d.end[i]), W + 1);
      const name = isCpu ? text(model.kinds[tr.k[d.b[i]]], 4, value(tr, d.b[i], 4)) : model.kinds[tr.k[d.b[i]]].name;
      const key = isCpu ? String(value(tr, d.b[i], 5)) + name : name;
      drawn++;
      if (x1 - x0 >= 1) {
        c.fillStyle = colorOf(key);
        c.fillRect(x0, y + 1, Math.max(1, x1 - x0 - 0.5), ROW_H - 2);
        if (x1 - x0 > 30) {
          c.fillStyle = '#10131a';
          const lx = Math.max(x0, LABEL_W) + 3;
          c.save();
          c.beginPath();
          c.rect(lx, y, x1 - lx - 2, ROW_H);
          c.clip();
          c.fillText(isCpu ? name + ' ' + value(tr, d.b[i], 5) : name, lx, y + ROW_H / 2);
          c.restore();
        }
        i++;
      } else {
        const px = Math.floor(x0);
        c.fillStyle = colorOf(key);
        c.fillRect(px, y + 1, 1, ROW_H - 2);
        i = lowerBound(d.start, view.t0 + (px + 1 - LABEL_W) * npp, i + 1);
      }
    }
  }

  // A thread's states: a band per interval in its state's colour; those
  // under a pixel gathered into one mark per pixel column, in the colour of
  // the first that runs there, else of the first.
  function drawStates(st, y) {
    if (!st) return;
    const c = ctx, d = st.states, npp = nsPerPx(), W = view.w;
    let i = lowerBound(d.end, view.t0);
    const n = d.start.length;
    while (i < n) {
      const s0 = d.start[i];
      if (s0 > view.t1) break;
      const x0 = xOf(s0), x1 = Math.min(xOf(d.end[i]), W + 1);
      drawn++;
      if (x1 - x0 >= 1) {
        c.fillStyle = STATES[d.state[i]] ? STATES[d.state[i]].color : '#ccc';
        c.fillRect(x0, y + 1, x1 - x0, STATE_H);
        if (x1 - x0 > 70 && d.state[i] !== 2 && d.state[i] !== 6) {
          c.fillStyle = d.state[i] === RUNNING ? '#fff' : '#10131a';
          c.font = '10px system-ui, sans-serif';
          c.fillText(STATES[d.state[i]].name, Math.max(x0, LABEL_W) + 3, y + 1 + STATE_H / 2);
          c.font = '12px system-ui, sans-serif';
        }
        i++;
      } else {
        const px = Math.floor(x0);
        const next = lowerBound(d.start, view.t0 + (px + 1 - LABEL_W) * npp, i + 1);
        let s = d.state[i];
        for (let j = i; j < next && j < i + 64; j++) if (d.state[j] === RUNNING) { s = RUNNING; break; }
        c.fillStyle = STATES[s] ? STATES[s].color : '#ccc';
        c.fillRect(px, y + 1, 1, STATE_H);
        i = next;
      }
    }
  }

  // The time a state track's thread ran before time t: the running time of
  // the intervals before the one t falls in, and of that one up to t.
  function ranBefore(d, t) {
    const i = lowerBound(d.start, t) - 1;
    if (i < 0) return 0;
    const own = d.state[i] === RUNNING ? Math.min(t - d.start[i], d.run[i + 1] - d.run[i]) : 0;
    return d.run[i] + Math.max(0, own);
  }

  // A process header: how many of its threads run (a green area, from their
  // states) and how many events they have (grey ticks), per pixel column: a
  // thread's running time in a column is the difference of ranBefore at its
  // edges, so that a frame costs the width times log(states) per thread.
  function drawSummary(tr, y) {
    const c = ctx, w = Math.ceil(plotW()), npp = nsPerPx();
    const run = new Float64Array(w), evs = new Float64Array(w);
    const visit = t => {
      if (t.stateTrack) {
        const d = t.stateTrack.states;
        if (d.start.length && d.run[d.start.length] > 0) {
          const from = Math.max(0, Math.floor((d.start[0] - view.t0) / npp));
          const to = Math.min(w, Math.ceil((d.end[d.start.length - 1] - view.t0) / npp));
          let before = ranBefore(d, view.t0 + from * npp);
          for (let p = from; p < to; p++) {
            const after = ranBefore(d, view.t0 + (p + 1) * npp);
            run[p] += (after - before) / npp;
            before = after;
          }
        }
      }
      if (t.n && t.kind !== KIND_STATE && t.kind !== KIND_COUNTER) {
        let i = lowerBound(t.t, view.t0);
        while (i < t.n && t.t[i] <= view.t1) {
          const p = Math.floor((t.t[i] - view.t0) / npp);
          const next = lowerBound(t.t, view.t0 + (p + 1) * npp, i + 1);
          if (p >= 0 && p < w) evs[p] += next - i;
          i = next;
        }
      }
      for (const ch of t.children) visit(ch);
    };
    visit(tr);
    let top = 1;
    for (let p = 0; p < w; p++) top = Math.max(top, run[p]);
    const h = SUMMARY_H - 4;
    c.fillStyle = STATES[RUNNING].color;
    for (let p = 0; p < w; p++) {
      if (run[p] <= 0) continue;
      const bh = Math.max(3, Math.round(h * run[p] / top));  // a short run stays visible
      c.fillRect(LABEL_W + p, y + 1 + h - bh, 1, bh);
      drawn++;
    }
    c.fillStyle = 'rgba(60, 70, 90, 0.55)';
    for (let p = 0; p < w; p++) {
      if (!evs[p]) continue;
      c.fillRect(LABEL_W + p, y + SUMMARY_H - 3, 1, 2);
      drawn++;
    }
  }

  const labelWidths = new Map();
  function labelWidth(name) {
    let w = labelWidths.get(name);
    if (w === undefined) { w = ctx.measureText(name).width; labelWidths.set(name, w); }
    return w;
  }

  // Instants: per pixel column, the events that fall there. One alone with
  // room around it is a marker (a diamond, and its name when there is room
  // up to the next one); a crowd, a bar the taller the more of them.
  function drawInstants(tr, y) {
    const c = ctx, a = tr.instT, npp = nsPerPx();
    let i = lowerBound(a, view.t0);
    const n = a.length;
    let prevX = -Infinity;
    c.font = '11px system-ui, sans-serif';
    while (i < n && a[i] <= view.t1) {
      const px = Math.floor(xOf(a[i]));
      const next = lowerBound(a, view.t0 + (px + 1 - LABEL_W) * npp, i + 1);
      const count = next - i;
      const nextX = next < n ? xOf(a[next]) : Infinity;
      const kind = model.kinds[tr.k[tr.inst[i]]];
      const mid = y + INSTANT_H / 2;
      if (count === 1 && nextX - px >= 9 && px - prevX >= 9) {
        const x = xOf(a[i]);
        c.fillStyle = kind.cat === 'ust' ? MARKER : colorOf(kind.name);
        c.beginPath();
        c.moveTo(x, mid - 6); c.lineTo(x + 5, mid); c.lineTo(x, mid + 6); c.lineTo(x - 5, mid);
        c.closePath();
        c.fill();
        const lw = labelWidth(kind.name);
        if (nextX - x > lw + 16 && x + 8 < view.w) {
          c.fillStyle = '#1d2330';
          c.fillText(kind.name, x + 8, mid);
        }
      } else {
        const h = Math.min(INSTANT_H - 2, 7 + 2 * Math.log2(count));
        c.fillStyle = kind.cat === 'ust' ? MARKER : colorOf(kind.name);
        c.fillRect(px, mid - h / 2, 2, h);
      }
      drawn++;
      prevX = px;
      i = next;
    }
    c.font = '12px system-ui, sans-serif';
  }

  function drawCounter(tr, y) {
    const c = ctx, a = tr.pointT, v = tr.pointV, npp = nsPerPx();
    const lo = tr.vmin, hi = tr.vmax === tr.vmin ? tr.vmin + 1 : tr.vmax;
    const yOf = x => y + COUNTER_H - 3 - (COUNTER_H - 6) * (x - lo) / (hi - lo);
    let i = Math.max(0, lowerBound(a, view.t0) - 1);
    c.strokeStyle = colorOf(tr.name);
    c.fillStyle = c.strokeStyle;
    c.beginPath();
    let first = true;
    while (i < a.length && (i === 0 || a[i - 1] <= view.t1)) {
      const px = Math.max(LABEL_W - 1, Math.floor(xOf(a[i])));
      const next = Math.max(i + 1, lowerBound(a, view.t0 + (px + 1 - LABEL_W) * npp, i + 1));
      let mn = v[i], mx = v[i];
      for (let j = i + 1; j < next && j < i + 64; j++) { mn = Math.min(mn, v[j]); mx = Math.max(mx, v[j]); }
      if (first) c.moveTo(px, yOf(v[i])); else c.lineTo(px, yOf(v[i]));
      if (mx !== mn) { c.lineTo(px, yOf(mx)); c.lineTo(px, yOf(mn)); }
      c.lineTo(px, yOf(v[next - 1]));
      first = false;
      drawn++;
      i = next;
    }
    if (!first) c.lineTo(view.w, yOf(v[i - 1]));
    c.stroke();
    c.fillText(String(tr.vmax), LABEL_W + 3, y + 6);
  }

  function drawAxis() {
    const c = ctx;
    c.fillStyle = '#f4f6f9';
    c.fillRect(0, 0, view.w, AXIS_H);
    c.strokeStyle = '#d5d9e0';
    c.beginPath();
    c.moveTo(0, AXIS_H - 0.5);
    c.lineTo(view.w, AXIS_H - 0.5);
    c.stroke();
    const span = view.t1 - view.t0;
    let step = Math.pow(10, Math.floor(Math.log10(span / 8)));
    if (span / step > 16) step *= 5; else if (span / step > 8) step *= 2;
    c.fillStyle = '#3d4556';
    c.textBaseline = 'middle';
    for (let t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      const x = xOf(t);
      c.fillRect(x, AXIS_H - 6, 1, 6);
      c.fillText(fmtDur(t - model.start), x + 3, AXIS_H / 2 - 2);
    }
    c.fillStyle = '#eef1f5';
    c.fillRect(0, 0, LABEL_W, AXIS_H);
    c.fillStyle = '#5b6475';
    c.fillText(fmtDur(span) + ' shown', 6, AXIS_H / 2);
    // the search's matches, a mark per pixel column
    if (matches.length) {
      c.fillStyle = '#e0457b';
      let lastPx = -1;
      for (const m of matches) {
        const px = Math.floor(xOf(m.track.t[m.i]));
        if (px === lastPx || px < LABEL_W || px > view.w) continue;
        c.fillRect(px, AXIS_H - 4, 1, 4);
        lastPx = px;
      }
    }
  }

  // The row a track is drawn in: its own, its thread's (a state track), else
  // that of the nearest folded track above it.
  function rowOf(tr) {
    if (tr.kind === KIND_STATE && tr.up) tr = tr.up;
    for (let t = tr; t; t = t.up) {
      const row = rows.find(r => r.track === t);
      if (row) return row;
    }
    return null;
  }

  // The wake-up of a selected state: the runnable interval it is (or the one
  // before it, for a running one) when a thread woke it.
  function wakeOf(sel) {
    if (!sel || !sel.slice || !sel.slice.state) return null;
    const st = sel.track, d = st.states;
    let i = sel.i;
    if (d.state[i] === RUNNING && i > 0 && d.state[i - 1] === RUNNABLE) i--;
    if (d.state[i] !== RUNNABLE) return null;
    const waker = Number(value(st, i, 3));
    return { t: d.start[i], waker: waker, runs: d.state[i + 1] === RUNNING && i + 1 < d.start.length ? d.start[i + 1] : null };
  }

  // The wake-up arrow: from the waker's row at the wake-up down (or up) to
  // the woken thread's states, then a dashed line on to when it ran.
  function drawWake(top) {
    const w = wakeOf(selected);
    if (!w) return;
    const to = rowOf(selected.track);
    const toPart = to && to.parts.find(p => p.what === 'states');
    if (!to || !toPart) return;
    const c = ctx, x = Math.round(xOf(w.t));  // on a pixel edge: a 2 px line of whole pixels
    const y1 = top + to.y + toPart.y + 1 + STATE_H / 2;
    const wakerTrack = tidTracks.get(w.waker);
    const from = wakerTrack ? rowOf(wakerTrack) : null;
    c.save();
    c.beginPath();
    c.rect(LABEL_W, AXIS_H, plotW(), view.h - AXIS_H);
    c.clip();
    c.strokeStyle = '#c2185b';
    c.fillStyle = '#c2185b';
    c.lineWidth = 2;
    if (from && from !== to) {
      const fp = from.parts.find(p => p.what === 'states') || from.parts[0];
      const y0 = top + from.y + (fp ? fp.y : 0) + 1 + STATE_H / 2;
      const dir = y1 > y0 ? 1 : -1;
      c.beginPath();
      c.arc(x, y0, 3, 0, 2 * Math.PI);
      c.fill();
      c.beginPath();
      c.moveTo(x, y0);
      c.lineTo(x, y1 - dir * 7);
      c.stroke();
      c.beginPath();
      c.moveTo(x, y1);
      c.lineTo(x - 5, y1 - dir * 8);
      c.lineTo(x + 5, y1 - dir * 8);
      c.closePath();
      c.fill();
    } else {
      c.beginPath();
      c.arc(x, y1, 4, 0, 2 * Math.PI);
      c.fill();
    }
    if (w.runs !== null) {
      c.setLineDash([4, 3]);
      c.beginPath();
      c.moveTo(x, y1);
      c.lineTo(xOf(w.runs), y1);
      c.stroke();
      c.setLineDash([]);
    }
    c.restore();
  }

  function drawSelection(top) {
    if (!selected) return;
    drawWake(top);
    const row = rowOf(selected.track);
    if (!row) return;
    const c = ctx;
    const part = partOf(row, selected);
    const y = top + row.y + (part ? part.y : 0);
    const h = part && part.what === 'inst' ? INSTANT_H : part && part.what === 'states' ? STATE_H + 2 : ROW_H;
    const t = selected.track.t[selected.i];
    const x0 = xOf(selected.slice ? selected.slice.start : t);
    const x1 = selected.slice ? Math.min(xOf(selected.slice.end), view.w + 2) : x0;
    if (y + h < AXIS_H) return;
    c.strokeStyle = '#0b57d0';
    c.lineWidth = 2;
    c.strokeRect(x0 - 2, y, Math.max(4, x1 - x0 + 4), h);
    c.lineWidth = 1;
  }

  function partOf(row, sel) {
    if (sel.slice && sel.slice.state) return row.parts.find(p => p.what === 'states');
    if (sel.slice) return row.parts.find(p => (sel.slice.cpu ? p.what === 'segs' : p.what === 'slices' && p.depth === sel.slice.depth));
    const kind = model.kinds[sel.track.k[sel.i]];
    return row.parts.find(p => p.what === (kind.cat === 'counter' ? 'counter' : 'inst'));
  }

  // ---- picking ----

  function pick(x, y) {
    const yy = y - AXIS_H + view.scrollY;
    const row = rows.find(r => yy >= r.y && yy < r.y + r.h);
    if (!row) return null;
    if (x < LABEL_W) return { label: row };
    const tr = row.track, t = tOf(x), slop = 4 * nsPerPx();
    for (const part of row.parts) {
      const py = yy - row.y - part.y;
      const ph = part.what === 'inst' ? INSTANT_H : part.what === 'counter' ? COUNTER_H
        : part.what === 'states' ? STATE_H + 2 : part.what === 'summary' ? SUMMARY_H : ROW_H;
      if (py < 0 || py >= ph || part.what === 'summary') continue;
      if (part.what === 'states') {
        const st = tr.stateTrack, d = st.states;
        const i = lowerBound(d.end, t);
        if (i < d.start.length && d.start[i] <= t) {
          return { track: st, i: i, slice: { start: d.start[i], end: d.end[i], b: i, e: -1, state: true } };
        }
        continue;
      }
      if (part.what === 'segs' || part.what === 'slices') {
        const d = part.what === 'segs' ? tr.segs : tr.depths[part.depth];
        let i = lowerBound(d.end, t - slop);
        if (i < d.start.length && d.start[i] <= t + slop) {
          return { track: tr, i: d.b[i], slice: { start: d.start[i], end: d.end[i], b: d.b[i], e: d.e[i],
                                                  depth: part.depth, cpu: part.what === 'segs' } };
        }
      } else {
        const a = part.what === 'inst' ? tr.instT : tr.pointT;
        const idx = part.what === 'inst' ? tr.inst : tr.points;
        let i = lowerBound(a, t - slop), best = -1;
        for (; i < a.length && a[i] <= t + slop; i++) if (best < 0 || Math.abs(a[i] - t) < Math.abs(a[best] - t)) best = i;
        if (best >= 0) return { track: tr, i: idx[best], slice: null };
      }
    }
    return null;
  }

  function select(sel) {
    selected = sel;
    showDetails();
    redraw();
  }

  // Time t as `tracery view` prints it: HH:MM:SS.nnnnnnnnn in local time,
  // or seconds.ns before the Epoch with a '-'.
  function wallClock(t) {
    const ns = model.origin + BigInt(Math.round(t)) + model.realtime;
    if (ns < 0n) {
      const a = -ns;
      return '-' + (a / 1000000000n) + '.' + String(a % 1000000000n).padStart(9, '0');
    }
    const d = new Date(Number(ns / 1000000000n) * 1000);
    const two = v => String(v).padStart(2, '0');
    return two(d.getHours()) + ':' + two(d.getMinutes()) + ':' + two(d.getSeconds()) + '.' +
      String(ns % 1000000000n).padStart(9, '0');
  }

  function showDetails() {
    details.textContent = '';
    if (!selected) {
      details.appendChild(el('p', 'tl-muted', 'Click an event or a slice to see its fields.'));
      return;
    }
    const tr = selected.track, i = selected.i, kind = model.kinds[tr.k[i]];
    const sl = selected.slice;
    const title = sl && sl.state ? STATES[tr.states.state[i]].name
      : sl && sl.cpu ? text(kind, 4, value(tr, i, 4)) + ' (tid ' + value(tr, i, 5) + ') running'
        : kind.name;
    details.appendChild(el('div', 'tl-name', title));
    const table = el('table');
    const add = (k, v) => {
      const r = table.insertRow();
      r.appendChild(el('td', 'tl-key', k));
      r.appendChild(el('td', '', v));
    };
    const owner = tr.kind === KIND_STATE && tr.up ? tr.up : tr;
    add('track', labelOf(owner) + (owner.up ? ' — ' + labelOf(owner.up) : ''));
    if (!(sl && sl.state)) add('category', kind.cat);
    add('time', wallClock(tr.t[i]));
    add('since start', fmtDur(tr.t[i] - model.start));
    if (sl) add('duration', sl.end === Infinity ? 'to the end of the trace' : fmtDur(sl.end - sl.start));
    if (sl && sl.state) {
      const cpu = Number(value(tr, i, 2));
      if (cpu >= 0) add('CPU', String(cpu));
      const w = wakeOf(selected);
      if (w) {
        const wt = tidTracks.get(w.waker);
        add('woken', wallClock(w.t) + (w.waker >= 0 ? ' by ' + (wt ? labelOf(wt) : 'tid ' + w.waker) : ''));
        if (w.runs !== null) add('wake-up latency', fmtDur(w.runs - w.t));
      }
      details.appendChild(table);
      return;
    }
    for (const [k, v] of fieldsOf(tr, i)) add(k, v);
    if (sl && sl.e >= 0 && !sl.cpu) {
      const fs = fieldsOf(tr, sl.e);
      if (fs.length) {
        for (const [k, v] of fs) add('end: ' + k, v);
      }
    }
    details.appendChild(table);
  }

  function el(tag, cls, textContent) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (textContent !== undefined) e.textContent = textContent;
    return e;
  }

  // ---- search ----

  const MAX_MATCHES = 100000, LISTED = 300;

  function search(q) {
    matches = [];
    current = -1;
    q = q.trim().toLowerCase();
    lastQuery = q;
    if (q) {
      const kindHit = model.kinds.map(k => k.name.toLowerCase().includes(q));
      const strHit = new Uint8Array(model.strs.length);
      model.strs.forEach((s, i) => { if (s.toLowerCase().includes(q)) strHit[i] = 1; });
      const num = /^-?\d+(\.\d+)?$/.test(q) ? Number(q) : NaN;
      outer:
      for (const tr of model.tracks) {
        if (!tr || tr.kind === KIND_STATE) continue;
        for (let i = 0; i < tr.n; i++) {
          const kk = tr.k[i], kind = model.kinds[kk];
          let hit = kindHit[kk];
          for (let j = 0; !hit && j < kind.fields.length; j++) {
            const v = value(tr, i, j), ty = kind.types[j];
            if (ty === 's' || ty === 'e' || ty === 'j') {
              hit = typeof v === 'number' ? strHit[v] === 1 : String(v).toLowerCase().includes(q);
            } else {
              hit = v === num || (typeof v === 'string' && v === q);
            }
          }
          if (hit) {
            matches.push({ track: tr, i: i });
            if (matches.length >= MAX_MATCHES) break outer;
          }
        }
      }
      matches.sort((a, b) => a.track.t[a.i] - b.track.t[b.i]);
    }
    listMatches(q);
    redraw();
  }

  function listMatches(q) {
    results.textContent = '';
    info.textContent = !q ? model.total.toLocaleString('en') + ' events' +
      (model.discarded ? ', ' + model.discarded.toLocaleString('en') + ' lost' : '')
      : (matches.length >= MAX_MATCHES ? 'over ' : '') + matches.length.toLocaleString('en') + ' found';
    matches.slice(0, LISTED).forEach((m, n) => {
      const li = el('li', '', '');
      li.dataset.n = n;
      li.textContent = fmtDur(m.track.t[m.i] - model.start) + '  ' + model.kinds[m.track.k[m.i]].name +
        '  — ' + labelOf(m.track);
      li.addEventListener('click', () => goTo(n));
      results.appendChild(li);
    });
    if (matches.length > LISTED) results.appendChild(el('li', 'tl-muted', '… ' + (matches.length - LISTED) + ' more (Enter steps through them)'));
  }

  // Shows match n: the view centred on it, its track scrolled to, selected.
  function goTo(n) {
    if (!matches.length) return;
    current = ((n % matches.length) + matches.length) % matches.length;
    const m = matches[current];
    reveal(m.track, m.i);
    for (const li of results.children) li.classList.toggle('tl-current', Number(li.dataset.n) === current);
  }

  function reveal(tr, i) {
    for (let p = tr.up; p; p = p.up) p.collapsed = false;
    layout();
    const t = tr.t[i], span = view.t1 - view.t0;
    if (t < view.t0 || t > view.t1 || span > (model.end - model.start) / 2) {
      const w = Math.min(span, Math.max(2000, (model.end - model.start) / 50));
      setRange(t - w / 2, t + w / 2);
    }
    const row = rows.find(r => r.track === tr);
    if (row && (row.y < view.scrollY || row.y + row.h > view.scrollY + view.h - AXIS_H)) {
      view.scrollY = Math.max(0, row.y - (view.h - AXIS_H) / 3);
    }
    clampScroll();
    // a begin selects its slice
    let sel = { track: tr, i: i, slice: null };
    const find = (d, depth, cpu) => {
      for (let s = 0; s < d.b.length; s++) {
        if (d.b[s] === i) return { start: d.start[s], end: d.end[s], b: i, e: d.e[s], depth: depth, cpu: cpu };
      }
      return null;
    };
    const kind = model.kinds[tr.k[i]];
    if (kind.phase === 1) tr.depths.some((d, depth) => (sel.slice = find(d, depth, false)));
    else if (kind.phase === 2) {  // an end selects the slice it ends
      tr.depths.some((d, depth) => {
        const s = d.e.indexOf(i);
        if (s >= 0) sel = { track: tr, i: d.b[s], slice: { start: d.start[s], end: d.end[s], b: d.b[s], e: i, depth: depth, cpu: false } };
        return s >= 0;
      });
    }
    else if (kind.name === 'sched_switch' && tr.segs) sel.slice = find(tr.segs, 0, true);
    select(sel);
  }

  // ---- zoom and pan ----

  function setRange(t0, t1) {
    const full = model.end - model.start;
    const minSpan = 50;
    if (t1 - t0 < minSpan) { const m = (t0 + t1) / 2; t0 = m - minSpan / 2; t1 = m + minSpan / 2; }
    const pad = full * 0.05 + minSpan;
    if (t1 - t0 > full + 2 * pad) { t0 = model.start - pad; t1 = model.end + pad; }
    if (t0 < model.start - pad) { t1 += model.start - pad - t0; t0 = model.start - pad; }
    if (t1 > model.end + pad) { t0 -= t1 - model.end - pad; t1 = model.end + pad; }
    view.t0 = t0;
    view.t1 = t1;
    redraw();
  }

  function zoom(factor, x) {
    const t = tOf(x === undefined ? LABEL_W + plotW() / 2 : Math.max(LABEL_W, x));
    setRange(t - (t - view.t0) * factor, t + (view.t1 - t) * factor);
  }

  function pan(px) {
    const d = px * nsPerPx();
    setRange(view.t0 + d, view.t1 + d);
  }

  function clampScroll() {
    view.scrollY = Math.max(0, Math.min(view.scrollY, view.contentH - (view.h - AXIS_H) + 20));
    view.scrollY = Math.max(0, view.scrollY);
  }

  // What "fit" shows: the activity of the user's processes (their events,
  // their threads' running states), else of every track; never the state
  // dump's events, which tell what was there before the trace began.
  function activity() {
    let lo = Infinity, hi = -Infinity;
    const add = tr => {
      lo = Math.min(lo, tr.first);
      hi = Math.max(hi, tr.last);
      if (tr.stateTrack) add(tr.stateTrack);
      for (const c of tr.children) add(c);
    };
    for (const r of rows) if (r.indent === 0 && r.track.interest) add(r.track);
    if (lo > hi) for (const tr of model.tracks) if (tr) { lo = Math.min(lo, tr.first); hi = Math.max(hi, tr.last); }
    if (lo > hi) return [model.start, model.end];
    if (hi - lo < 1000) { const m = (lo + hi) / 2; lo = m - 500; hi = m + 500; }
    return [lo, hi];
  }

  function resetView() {
    const [lo, hi] = activity();
    const pad = (hi - lo) * 0.03;
    setRange(lo - pad, hi + pad);
  }

  function wholeTrace() {
    const pad = (model.end - model.start) * 0.02;
    setRange(model.start - pad, model.end + pad);
  }

  function resize() {
    const main = canvas.parentElement;
    view.dpr = window.devicePixelRatio || 1;
    view.w = main.clientWidth;
    view.h = main.clientHeight;
    canvas.width = Math.round(view.w * view.dpr);
    canvas.height = Math.round(view.h * view.dpr);
    canvas.style.width = view.w + 'px';
    canvas.style.height = view.h + 'px';
    clampScroll();
    draw();
  }

  // ---- the page ----

  function build() {
    const root = el('div');
    root.id = 'tl-root';
    const bar = el('div');
    bar.id = 'tl-bar';
    bar.appendChild(el('span', 'tl-title', 'Tracery timeline'));
    searchBox = el('input');
    searchBox.type = 'search';
    searchBox.id = 'tl-search';
    searchBox.placeholder = 'Search names and field values (Enter: next)';
    bar.appendChild(searchBox);
    const button = (label, title, fn) => {
      const b = el('button', '', label);
      b.title = title;
      b.addEventListener('click', fn);
      bar.appendChild(b);
      return b;
    };
    button('◀', 'previous match (Shift+Enter)', () => goTo(current - 1));
    button('▶', 'next match (Enter)', () => goTo(current + 1));
    button('+', 'zoom in (W, Ctrl+wheel)', () => zoom(0.5));
    button('−', 'zoom out (S, Ctrl+wheel)', () => zoom(2));
    button('fit', 'the activity of the user\'s processes (0)', resetView);
    button('all', 'the whole trace (9)', wholeTrace);
    info = el('span', 'tl-info', '');
    bar.appendChild(info);
    const body = el('div');
    body.id = 'tl-body';
    const main = el('div');
    main.id = 'tl-main';
    canvas = el('canvas');
    canvas.id = 'tl-canvas';
    main.appendChild(canvas);
    const side = el('div');
    side.id = 'tl-side';
    const legend = el('div');
    legend.id = 'tl-legend';
    for (const st of STATES) {
      const item = el('span', 'tl-key-item', '');
      const sw = el('span', 'tl-swatch', '');
      sw.style.background = st.color;
      item.appendChild(sw);
      item.appendChild(document.createTextNode(st.name));
      legend.appendChild(item);
    }
    const marker = el('span', 'tl-key-item', '');
    marker.appendChild(el('span', 'tl-diamond', ''));
    marker.appendChild(document.createTextNode('user event'));
    legend.appendChild(marker);
    const arrow = el('span', 'tl-key-item', '');
    arrow.appendChild(el('span', 'tl-arrow', '↓'));
    arrow.appendChild(document.createTextNode('wake-up (click a state)'));
    legend.appendChild(arrow);
    side.appendChild(el('h2', '', 'Thread states'));
    side.appendChild(legend);
    side.appendChild(el('h2', '', 'Selected'));
    details = el('div');
    details.id = 'tl-details';
    side.appendChild(details);
    side.appendChild(el('h2', '', 'Search'));
    results = el('ul');
    results.id = 'tl-results';
    side.appendChild(results);
    side.appendChild(el('p', 'tl-muted',
      'Wheel: scroll the tracks; Ctrl+wheel or W/S: zoom; Shift+wheel, drag or A/D: pan; 0: fit the user\'s ' +
      'processes; 9: the whole trace; ' +
      'click a track\'s name to fold it.'));
    body.appendChild(main);
    body.appendChild(side);
    root.appendChild(bar);
    root.appendChild(body);
    document.body.appendChild(root);
    ctx = canvas.getContext('2d', { alpha: false });
  }

  function listen() {
    window.addEventListener('resize', resize);
    canvas.addEventListener('wheel', ev => {
      ev.preventDefault();
      if (ev.ctrlKey || ev.metaKey) zoom(Math.pow(1.0015, ev.deltaY), ev.offsetX);
      else if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) pan((ev.deltaX || ev.deltaY));
      else { view.scrollY += ev.deltaY; clampScroll(); redraw(); }
    }, { passive: false });
    let drag = null;
    canvas.addEventListener('mousedown', ev => {
      drag = { x: ev.offsetX, y: ev.offsetY, moved: false, t0: view.t0, t1: view.t1, scrollY: view.scrollY };
    });
    window.addEventListener('mousemove', ev => {
      if (!drag) return;
      const dx = ev.offsetX - drag.x, dy = ev.offsetY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (drag.moved && ev.target === canvas) {
        const d = -dx * (drag.t1 - drag.t0) / plotW();
        setRange(drag.t0 + d, drag.t1 + d);
        view.scrollY = drag.scrollY - dy;
        clampScroll();
      }
    });
    window.addEventListener('mouseup', ev => {
      const d = drag;
      drag = null;
      if (!d || d.moved || ev.target !== canvas) return;
      const p = pick(ev.offsetX, ev.offsetY);
      if (p && p.label) {
        if (p.label.track.children.length) {
          p.label.track.collapsed = !p.label.track.collapsed;
          layout();
          clampScroll();
          redraw();
        }
        return;
      }
      select(p);
    });
    let timer = 0;
    searchBox.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => search(searchBox.value), 250);
    });
    searchBox.addEventListener('keydown', ev => {
      if (ev.key !== 'Enter') return;
      clearTimeout(timer);
      if (searchBox.value.trim().toLowerCase() !== lastQuery) search(searchBox.value);
      goTo(ev.shiftKey ? current - 1 : current + 1);
    });
    window.addEventListener('keydown', ev => {
      if (ev.target === searchBox) return;
      const k = ev.key.toLowerCase();
      if (k === 'w') zoom(0.8);
      else if (k === 's') zoom(1.25);
      else if (k === 'a') pan(-plotW() / 8);
      else if (k === 'd') pan(plotW() / 8);
      else if (k === '0') resetView();
      else if (k === '9') wholeTrace();
    });
  }

  function start() {
    const t0 = performance.now();
    build();
    loadChunks();
    layout();
    listen();
    const loaded = performance.now();
    view.t0 = model.start;
    view.t1 = model.end;
    resize();
    resetView();
    draw();
    showDetails();
    listMatches('');
    api.loadMs = loaded - t0;
    api.firstFrameMs = performance.now() - t0;
    api.ready = true;
  }

  // What the tests read and drive (tests/html_test.py).
  const api = {
    ready: false,
    model: model,
    view: view,
    get rows() {
      return rows.map(r => ({ id: r.track.id, kind: r.track.kind, label: r.label, y: r.y + AXIS_H - view.scrollY,
                              h: r.h, events: r.track.n }));
    },
    get drawn() { return drawn; },
    get matches() { return matches.length; },
    get selected() { return selected ? { track: selected.track.id, name: model.kinds[selected.track.k[selected.i]].name } : null; },
    draw: draw,
    // the CSS px inside the canvas where the nth (from 0) event named name is drawn, after revealing it
    locate(name, nth) {
      nth = nth || 0;
      for (const tr of model.tracks) {
        if (!tr) continue;
        for (let i = 0; i < tr.n; i++) {
          if (model.kinds[tr.k[i]].name !== name || nth-- > 0) continue;
          reveal(tr, i);
          const sel = selected;
          select(null);
          draw();
          const row = rows.find(r => r.track === tr);
          const part = partOf(row, sel);
          const h = part.what === 'inst' ? INSTANT_H : ROW_H;
          return { x: xOf(tr.t[i]) + (sel.slice ? 2 : 0), y: AXIS_H - view.scrollY + row.y + part.y + h / 2 };
        }
      }
      return null;
    },
    // the CSS px inside the canvas of thread tid's state band at time t (ns after origin), its row shown
    stateAt(tid, t) {
      const tr = tidTracks.get(tid);
      if (!tr || !tr.stateTrack) return null;
      for (let p = tr.up; p; p = p.up) p.collapsed = false;
      layout();
      const row = rows.find(r => r.track === tr);
      view.scrollY = Math.max(0, row.y - 40);
      clampScroll();
      draw();
      const part = row.parts.find(p => p.what === 'states');
      // the band's last pixel row: below the states' names
      return { x: xOf(t), y: AXIS_H - view.scrollY + row.y + part.y + STATE_H };
    },
    wallClock: wallClock,
    get activity() { return activity(); },
    zoom: zoom,
    pan: pan,
    resetView: resetView,
    wholeTrace: wholeTrace,
  };
  window.tracery = api;

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();

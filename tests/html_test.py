"""`tracery export --format html`: the timeline opened in headless Chromium (Debian's `chromium`), driven through the
DevTools protocol over --remote-debugging-pipe (fds 3 and 4, JSON messages ended by NUL; no Python package needed):
the page loads from disk with every event, draws its tracks (canvas pixels in each track's row), a click on an event
shows its fields, the search box finds events by name and by field value, the wheel zooms and a drag pans; a
screenshot is saved and its path printed. On the hand-forged trace of tests/analyze_test.py (with a thread name
made hostile: an end of script element and bytes that are not UTF-8) and, as root, on a kernel and user trace
recorded through the daemon (CPU tracks from sched_switch, system calls, a counter). On a kernel and a user trace
forged with known times: the thread states' colours read back from the canvas's pixels at known times, a
wake-up's arrow, the user's processes first and the others folded, a user event's marker and label at the default
zoom, "fit" to the user's processes' activity, the panel's time as `tracery view` prints it, the header's count as
the export reports it. The screenshots are saved to build/html_test/ (docs/images/ keeps copies, linked from
docs/export.md). Skipped, saying so, when `chromium` is not installed."""
import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import uuid

import analyze_test
from analyze_test import forge, tracery
from ctf_forge import BitWriter
from daemontest import DaemonEnv
from export_test import record_kernel_workload, run_kernel_workload
from tracetest import BUILD_DIR

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HOSTILE = "db</script><script>window.pwned=1</script><!--\u00e9"  # é: two bytes made invalid in the trace
SHOTS = os.path.join(BUILD_DIR, "html_test")  # where the screenshots stay after the test


class Browser:
    """Headless Chromium and one page of it, over the DevTools protocol on a pipe."""

    def __init__(self, width=1400, height=900):
        self.profile = tempfile.mkdtemp(prefix="tracery-html-chromium-")
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def fds():  # the protocol's pipe on fds 3 (read by the browser) and 4 (written by it)
            a, b = os.dup(to_browser_r) + 100, os.dup(from_browser_w) + 100
            os.dup2(to_browser_r, a)
            os.dup2(from_browser_w, b)
            os.dup2(a, 3)
            os.dup2(b, 4)

        argv = [CHROMIUM, "--headless=new", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--mute-audio", f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}", "about:blank"]
        if os.geteuid() == 0:
            argv.insert(1, "--no-sandbox")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=fds, close_fds=False)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.page("Page.enable")
        self.page("Runtime.enable")
        self.page("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:  # noqa: BLE001 (gone already)
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_browser)
        os.close(self.from_browser)
        shutil.rmtree(self.profile, True)

    def _read(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\0" not in self.buf:
            if time.monotonic() > deadline:
                raise AssertionError("no answer from Chromium")
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise AssertionError("Chromium closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, session=None, timeout=120, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.to_browser, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read(timeout)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise AssertionError(f"{method}: {m['error']}")
                return m["result"]
            if "method" in m:
                self.events.append(m)

    def page(self, method, **params):
        return self.call(method, session=self.session, **params)

    def wait_event(self, name, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            for i, m in enumerate(self.events):
                if m["method"] == name:
                    return self.events.pop(i)
            if time.monotonic() > deadline:
                raise AssertionError(f"no {name} from Chromium")
            m = self._read(deadline - time.monotonic())
            if "method" in m:
                self.events.append(m)

    def js(self, expression):
        r = self.page("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise AssertionError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def open(self, path, timeout=120):
        """Loads the file; returns seconds until the timeline is ready."""
        start = time.monotonic()
        self.events.clear()
        self.page("Page.navigate", url="file://" + os.path.abspath(path))
        self.wait_event("Page.loadEventFired", timeout)
        while not self.js("!!(window.tracery && window.tracery.ready)"):
            if time.monotonic() - start > timeout:
                raise AssertionError("the timeline never became ready")
            time.sleep(0.05)
        return time.monotonic() - start

    def click(self, x, y):
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.page("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def canvas_origin(self):
        return self.js("(() => { const r = document.getElementById('tl-canvas').getBoundingClientRect();"
                       " return [r.left, r.top]; })()")

    def type_search(self, text):
        r = self.js("(() => { const r = document.getElementById('tl-search').getBoundingClientRect();"
                    " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        self.click(*r)
        self.page("Input.insertText", text=text)
        for kind in ("keyDown", "keyUp"):
            self.page("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter", windowsVirtualKeyCode=13)

    def screenshot(self, path):
        data = self.page("Page.captureScreenshot", format="png")["data"]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        print(f"screenshot: {path}", flush=True)


# Per row of the timeline: its label and the pixels of its plot area (right of the names, below the axis) that are
# not the row's background.
INK = """(() => {
  const c = document.getElementById('tl-canvas');
  tracery.draw();
  const g = c.getContext('2d'), dpr = c.width / c.clientWidth;
  return tracery.rows.filter(r => r.y >= 26 && r.y + r.h <= c.clientHeight).map(r => {
    const d = g.getImageData(Math.round(221 * dpr), Math.round((r.y + 1) * dpr), c.width - Math.round(221 * dpr),
                             Math.round((r.h - 2) * dpr)).data;
    const bg = [d[0], d[1], d[2]];
    let ink = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] !== bg[0] || d[i + 1] !== bg[1] || d[i + 2] !== bg[2]) ink++;
    return {label: r.label, kind: r.kind, events: r.events, ink: ink};
  });
})()"""


# A kernel trace (CPU 0) and a user trace on one monotonic clock, times in ns after its offset. Threads: web 11
# (process 10) and db 21 (process 20) with user events; kworker 30, a kernel thread; the state dump names them.
OFFSET_S = 1700000000
SCHED_SWITCH, SCHED_WAKEUP, STATEDUMP = 1, 2, 3
KERNEL_EVENTS = [
    (STATEDUMP, 100, (30, 30, 2, "kworker")), (STATEDUMP, 110, (11, 10, 1, "web")),
    (STATEDUMP, 120, (21, 20, 1, "db")),
    (SCHED_SWITCH, 1000, ("swapper/0", 0, 20, 0, "web", 11, 20)),   # web runs from 1000
    (SCHED_SWITCH, 3000, ("web", 11, 20, 1, "db", 21, 20)),          # web sleeps (S), db runs
    (SCHED_WAKEUP, 5000, ("web", 11, 20, 0)),                        # db wakes web: runnable
    (SCHED_SWITCH, 6000, ("db", 21, 20, 2, "web", 11, 20)),          # db uninterruptible (D), web runs
    (SCHED_SWITCH, 9000, ("web", 11, 20, 0, "kworker", 30, 20)),     # web preempted: runnable
    (SCHED_SWITCH, 10000, ("kworker", 30, 20, 0x80, "web", 11, 20)),  # kworker idle (I), web runs
    (SCHED_SWITCH, 11000, ("web", 11, 20, 1, "swapper/0", 0, 20)),   # web sleeps to the end
    (SCHED_SWITCH, 50000, ("swapper/0", 0, 20, 0, "kworker", 30, 20)),  # kworker, long after
]
# user events: (id, time, pid, tid, name)
APP_TICK, APP_BEGIN, APP_END = 1, 2, 3
USER_EVENTS = [(APP_TICK, 2000, 10, 11, "web"), (APP_TICK, 4000, 20, 21, "db"), (APP_BEGIN, 6500, 10, 11, "web"),
               (APP_END, 8500, 10, 11, "web")]
# colours of timeline.js's STATES
RUNNING, RUNNABLE, SLEEPING, UNINTERRUPTIBLE, IDLE = (46, 125, 50), (156, 204, 101), (213, 221, 232), (239, 108, 0), \
    (238, 241, 245)
MARKER = (31, 79, 191)
ARROW = (194, 24, 91)

SCHED_METADATA = """/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 32; align = 8; signed = true; } := int32_t;
typealias integer { size = 64; align = 8; signed = true; } := int64_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
trace {
	major = 1; minor = 8; uuid = "UUID"; byte_order = le;
	packet.header := struct { uint32_t magic; uint8_t uuid[16]; uint32_t stream_id; };
};
env { hostname = "forge"; domain = "DOMAIN"; tracer_name = "forge"; };
clock { name = "monotonic"; description = "Monotonic Clock"; freq = 1000000000; offset_s = OFFSET; absolute = true; };
typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_t;
stream {
	id = 0;
	packet.context := struct {
		uint64_clock_t timestamp_begin; uint64_clock_t timestamp_end;
		uint64_t content_size; uint64_t packet_size; uint32_t cpu_id;
	};
	event.header := struct { uint32_t id; uint64_clock_t timestamp; };
	CONTEXT
};
"""
KERNEL_CLASSES = """
event { name = "sched_switch"; id = 1; stream_id = 0; fields := struct { string _prev_comm; int32_t _prev_tid;
	int32_t _prev_prio; int64_t _prev_state; string _next_comm; int32_t _next_tid; int32_t _next_prio; }; };
event { name = "sched_wakeup"; id = 2; stream_id = 0; fields := struct { string _comm; int32_t _tid; int32_t _prio;
	int32_t _target_cpu; }; };
event { name = "lttng_statedump_process_state"; id = 3; stream_id = 0; fields := struct { int32_t _tid;
	int32_t _pid; int32_t _ppid; string _name; }; };
"""
USER_CLASSES = """
event { name = "app:tick"; id = 1; stream_id = 0; fields := struct { uint32_t _n; }; };
event { name = "app:begin"; id = 2; stream_id = 0; fields := struct { uint32_t _n; }; };
event { name = "app:end"; id = 3; stream_id = 0; fields := struct { uint32_t _n; }; };
"""


def forge_stream(path, domain, context, classes, events, write_event, env=""):
    """One trace of one stream and one packet (CPU 0); write_event(writer, event) writes an event's context and
    fields; env: more entries of its env."""
    u = uuid.uuid4()
    os.makedirs(path)
    with open(os.path.join(path, "metadata"), "w") as f:
        f.write(SCHED_METADATA.replace("UUID", str(u)).replace("DOMAIN", domain).replace("OFFSET", str(OFFSET_S))
                .replace("CONTEXT", context).replace('tracer_name = "forge";', 'tracer_name = "forge"; ' + env)
                + classes)

    def prefix(w, content, size):
        w.int(0xC1FC1FC1, 32)
        w.raw(u.bytes)
        w.int(0, 32)
        for v in (events[0][1], events[-1][1], content, size):
            w.int(v, 64)
        w.int(0, 32)
    body = BitWriter(False)
    prefix(body, 0, 0)
    for e in events:
        body.int(e[0], 32)
        body.int(e[1], 64)
        write_event(body, e)
    content = body.nbits()
    final = BitWriter(False)
    prefix(final, content, content + 64)
    final.bits += body.bits[final.nbits():] + [0] * 64
    with open(os.path.join(path, "stream_0"), "wb") as f:
        f.write(final.to_bytes())


def kernel_event(w, e):
    """Writes the fields of a kernel event of KERNEL_CLASSES."""
    eid, _, f = e
    kinds = {SCHED_SWITCH: "siiisii", SCHED_WAKEUP: "siii", STATEDUMP: "iiis"}[eid]
    for j, (kind, v) in enumerate(zip(kinds, f)):
        if kind == "s":
            w.string(v)
        else:
            w.int(v, 64 if (eid, j) == (SCHED_SWITCH, 3) else 32)  # prev_state: int64_t


def forge_sched(path):
    """The kernel and user traces of KERNEL_EVENTS and USER_EVENTS under path (kernel/, ust/)."""
    def user_event(w, e):
        _, _, pid, tid, name = e
        w.int(pid, 32)
        w.int(tid, 32)
        w.string(name)
        w.int(7, 32)
    forge_stream(os.path.join(path, "kernel"), "kernel", "", KERNEL_CLASSES, KERNEL_EVENTS, kernel_event)
    forge_stream(os.path.join(path, "ust"), "ust", "event.context := struct { int32_t _vpid; int32_t _vtid; "
                 "string _procname; };", USER_CLASSES, USER_EVENTS, user_event)


class HtmlCase(unittest.TestCase):
    def setUp(self):
        if not CHROMIUM:
            self.skipTest("chromium is not installed (apt-get install chromium): the HTML timeline is not checked")
        self.tmp = tempfile.mkdtemp(prefix="tracery-html-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.b = Browser()
        self.addCleanup(self.b.close)

    def details(self):
        return self.b.js("document.getElementById('tl-details').innerText")

    def click_event(self, name, nth=0):
        """Clicks, with the mouse, where the nth event called name is drawn; returns the details panel's text."""
        pos = self.b.js(f"JSON.stringify(tracery.locate({json.dumps(name)}, {nth}))")
        self.assertIsNotNone(json.loads(pos), name)
        pos = json.loads(pos)
        left, top = self.b.canvas_origin()
        self.b.click(left + pos["x"], top + pos["y"])
        self.b.js("new Promise(r => requestAnimationFrame(() => r(1)))")
        self.assertEqual(self.b.js("tracery.selected && tracery.selected.name"), name)
        return self.details()

    def check_zoom_and_pan(self):
        b = self.b
        b.js("tracery.resetView(), tracery.draw(), 1")
        span0 = b.js("tracery.view.t1 - tracery.view.t0")
        left, top = b.canvas_origin()
        x, y = left + 700, top + 40
        b.page("Input.dispatchMouseEvent", type="mouseWheel", x=x, y=y, deltaX=0, deltaY=-600, modifiers=2)
        b.js("new Promise(r => requestAnimationFrame(() => r(1)))")
        span1 = b.js("tracery.view.t1 - tracery.view.t0")
        self.assertLess(span1, span0 / 2, "Ctrl+wheel zooms in")
        t0 = b.js("tracery.view.t0")
        b.page("Input.dispatchMouseEvent", type="mousePressed", x=x, y=y, button="left", clickCount=1)
        b.page("Input.dispatchMouseEvent", type="mouseMoved", x=x - 200, y=y, button="left")
        b.page("Input.dispatchMouseEvent", type="mouseReleased", x=x - 200, y=y, button="left", clickCount=1)
        self.assertGreater(b.js("tracery.view.t0"), t0, "a drag to the left shows later times")
        self.assertAlmostEqual(b.js("tracery.view.t1 - tracery.view.t0"), span1, delta=span1 * 1e-6)


class ForgedHtmlTest(HtmlCase):
    def test_forged_trace(self):
        trace = os.path.join(self.tmp, "forged")
        saved = dict(analyze_test.PROCESS)
        analyze_test.PROCESS[21] = (20, HOSTILE)
        try:
            forge(trace)
        finally:
            analyze_test.PROCESS.clear()
            analyze_test.PROCESS.update(saved)
        for stream in ("stream_0", "stream_1"):
            with open(os.path.join(trace, stream), "r+b") as f:
                data = f.read()
                f.seek(0)
                f.write(data.replace("\u00e9".encode(), b"\xff\xfe"))
        total = sum(len(events) for packets in analyze_test.STREAMS.values() for _, _, events in packets)
        out = os.path.join(self.tmp, "forged.html")
        printed = tracery("export", "--format", "html", "--span", "app:begin,app:end", trace, out).stderr
        self.assertIn(f"{total} events written to {out}", printed)
        with open(out, "rb") as f:
            page = f.read()
        self.assertEqual(page.count(b"</script>"), page.count(b"<script"), "no trace string closes a script")
        page.decode("utf-8")  # valid UTF-8 throughout

        b = self.b
        b.open(out)
        self.assertTrue(b.js("tracery.model.complete"))
        self.assertIsNone(b.js("window.pwned"), "the hostile name ran as a script")
        self.assertEqual(b.js("tracery.model.events"), total)
        rows = {r["label"]: r for r in b.js(INK)}
        hostile = HOSTILE.replace("\u00e9", "??") + " 21"
        self.assertIn(hostile, rows, "the hostile thread name shown as it is, its bad bytes as '?'")
        self.assertIn("web 10", rows)  # an unnamed process after its thread
        for label in ("web 11", hostile):
            self.assertGreater(rows[label]["ink"], 20, f"{label}: its events drawn ({rows})")

        # a span, clicked: its begin's and end's fields (request 2, 1100..1150 on thread 11)
        text = self.click_event("app:begin", 1)
        self.assertIn("duration\t50 ns", text)
        self.assertIn("ok", text)  # the end's status
        self.assertIn("req\t2", text)
        text = self.click_event("app:tick")
        self.assertIn("app:tick", text)
        self.assertIn("web", text)

        # the search box: by field value, then by name
        b.type_search("ok")
        self.assertEqual(b.js("tracery.matches"), 4)  # the four app:end, status "ok"
        self.assertEqual(b.js("tracery.selected.name"), "app:begin")  # Enter shows the first: the span it ends
        self.assertIn("4 found", b.js("document.getElementById('tl-bar').innerText"))
        b.js("document.getElementById('tl-search').value = ''")
        b.type_search("tick")
        self.assertEqual(b.js("tracery.matches"), 2)
        self.assertEqual(b.js("tracery.selected.name"), "app:tick")
        self.assertEqual(len(b.js("[...document.querySelectorAll('#tl-results li')].map(l => l.innerText)")), 2)
        self.check_zoom_and_pan()
        b.js("tracery.resetView(), tracery.draw(), 1")
        b.screenshot(os.path.join(SHOTS, "forged.png"))


# The colours of the canvas's pixels at CSS px (x, y), as [r, g, b].
PIXEL = """((x, y) => {
  const c = document.getElementById('tl-canvas'), dpr = c.width / c.clientWidth;
  return [...c.getContext('2d').getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data.slice(0, 3)];
})"""
# How many pixels of colour rgb (null: dark ones, as text's) lie in the box of CSS px [x0, x1) x [y0, y1).
COUNT = """((x0, y0, x1, y1, rgb) => {
  const c = document.getElementById('tl-canvas'), dpr = c.width / c.clientWidth;
  const d = c.getContext('2d').getImageData(Math.round(x0 * dpr), Math.round(y0 * dpr), Math.round((x1 - x0) * dpr),
                                            Math.round((y1 - y0) * dpr)).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (rgb ? d[i] === rgb[0] && d[i + 1] === rgb[1] && d[i + 2] === rgb[2] : d[i] + d[i + 1] + d[i + 2] < 300) n++;
  }
  return n;
})"""


class SchedHtmlTest(HtmlCase):
    """The forged kernel and user traces of KERNEL_EVENTS and USER_EVENTS: what is drawn where, at known times."""

    def test_thread_states(self):
        trace = os.path.join(self.tmp, "sched")
        forge_sched(trace)
        out = os.path.join(self.tmp, "sched.html")
        total = len(KERNEL_EVENTS) + len(USER_EVENTS)
        printed = tracery("export", "--format", "html", "--span", "app:begin,app:end", trace, out).stderr
        self.assertIn(f"{total} events written to {out}", printed)
        b = self.b
        b.open(out)
        # the header counts what the export reported (thread states and slice ends are not events)
        self.assertEqual(b.js("document.querySelector('#tl-bar .tl-info').innerText"), f"{total} events")

        # the user's processes first (with user events, expanded), the CPU, then the kernel thread's, folded
        roots = [r["label"] for r in b.js("tracery.rows") if r["kind"] in (1, 4)]
        self.assertEqual(roots[:3], ["web 10", "db 20", "CPU 0"], roots)
        self.assertEqual(roots[3], "kworker 30", roots)
        labels = [r["label"] for r in b.js("tracery.rows")]
        self.assertIn("web 11", labels)
        self.assertNotIn("kworker 30", labels[labels.index("kworker 30") + 1:], "kworker's process is folded")

        # "fit": the user's processes' activity (web running from 1000 to 11000), not the state dump at 100 nor
        # kworker at 50000
        origin = b.js("Number(tracery.model.origin)")
        self.assertEqual(origin, 100)
        self.assertEqual(b.js("tracery.activity"), [1000 - origin, 11000 - origin])
        self.assertLess(b.js("tracery.view.t1"), 12000 - origin)
        b.screenshot(os.path.join(SHOTS, "states.png"))  # as the page opens

        # the thread states' colours at known times
        expect = [(11, 2000, RUNNING), (11, 4000, SLEEPING), (11, 5500, RUNNABLE), (11, 7000, RUNNING),
                  (11, 9500, RUNNABLE), (11, 10500, RUNNING), (21, 4000, RUNNING), (21, 7000, UNINTERRUPTIBLE),
                  (21, 2000, None)]
        for tid, t, rgb in expect:
            pos = b.js(f"tracery.stateAt({tid}, {t - origin})")
            got = tuple(b.js(f"{PIXEL}({pos['x']}, {pos['y']})"))
            if rgb is None:  # before the first event that tells db's state: nothing drawn
                self.assertNotIn(got, (RUNNING, RUNNABLE, SLEEPING, UNINTERRUPTIBLE), f"tid {tid} at {t}")
            else:
                self.assertEqual(got, rgb, f"tid {tid} at {t}")
        pos = b.js(f"tracery.stateAt(30, {9800 - origin})")  # kworker's row, its process unfolded
        self.assertEqual(tuple(b.js(f"{PIXEL}({pos['x']}, {pos['y']})")), RUNNING)
        pos = b.js(f"tracery.stateAt(30, {10500 - origin})")
        self.assertEqual(tuple(b.js(f"{PIXEL}({pos['x']}, {pos['y']})")), IDLE)

        # a user instant at the default zoom: a marker (at least a diamond's worth of its colour) and its label
        b.js("tracery.resetView(), tracery.draw(), 1")
        pos = json.loads(b.js("JSON.stringify(tracery.locate('app:tick', 0))"))
        b.js("tracery.resetView(), tracery.draw(), 1")
        x, y = pos["x"], pos["y"]
        self.assertGreaterEqual(b.js(f"{COUNT}({x - 6}, {y - 7}, {x + 7}, {y + 7}, {list(MARKER)})"), 40)
        self.assertGreater(b.js(f"{COUNT}({x + 8}, {y - 6}, {x + 60}, {y + 6}, null)"), 20, "its label")

        # the panel's time of app:tick as `tracery view` prints it
        text = self.click_event("app:tick")
        view_line = next(line for line in tracery("view", trace).stdout.splitlines() if "app:tick" in line)
        stamp = view_line[1:view_line.index("]")]
        self.assertIn(f"time\t{stamp}\n", text)

        # a click on web's runnable state at 5500: woken by db at 5000, ran at 6000; the arrow from db's row
        pos = b.js(f"tracery.stateAt(11, {5500 - origin})")
        left, top = b.canvas_origin()
        b.click(left + pos["x"], top + pos["y"])
        b.js("new Promise(r => requestAnimationFrame(() => r(1)))")
        text = self.details()
        self.assertTrue(text.startswith("Runnable"), text)
        self.assertIn("woken\t" + stamp[:-4] + "5000 by db 21", text)
        self.assertIn("wake-up latency\t1.000 µs", text)
        db = b.js(f"tracery.stateAt(21, {5000 - origin})")
        web = b.js(f"tracery.stateAt(11, {5000 - origin})")
        x = web["x"]
        lo, hi = sorted((db["y"], web["y"]))
        self.assertGreater(b.js(f"{COUNT}({x - 2}, {lo}, {x + 3}, {hi}, {list(ARROW)})"), (hi - lo) * 1.5,
                           "the wake-up arrow joins db's row to web's")
        b.screenshot(os.path.join(SHOTS, "wakeup.png"))

        # --focus: kworker's process after the user's, before the CPU, unfolded; the other formats refuse it
        focused = os.path.join(self.tmp, "focus.html")
        tracery("export", "--format", "html", "--focus", "kworker", trace, focused)
        b.open(focused)
        labels = [r["label"] for r in b.js("tracery.rows")]
        roots = [r["label"] for r in b.js("tracery.rows") if r["kind"] in (1, 4)]
        self.assertEqual(roots, ["web 10", "db 20", "kworker 30", "CPU 0"])
        self.assertIn("kworker 30", labels[labels.index("kworker 30") + 1:], "its thread shown")
        r = tracery("export", "--format", "perfetto", "--focus", "30", trace, os.path.join(self.tmp, "p"), check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--focus orders the processes of the html format's timeline", r.stderr)


# A kernel trace alone (CPU 0): busy 50 runs longest, kworker 30 for 500 ns, cron 40 for 1000 ns.
TRACKED_EVENTS = [
    (STATEDUMP, 100, (30, 30, 2, "kworker")), (STATEDUMP, 110, (40, 40, 1, "cron")),
    (STATEDUMP, 120, (50, 50, 1, "busy")),
    (SCHED_SWITCH, 1000, ("swapper/0", 0, 20, 0, "busy", 50, 20)),
    (SCHED_SWITCH, 9000, ("busy", 50, 20, 0, "kworker", 30, 20)),
    (SCHED_SWITCH, 9500, ("kworker", 30, 20, 0x80, "cron", 40, 20)),
    (SCHED_SWITCH, 10500, ("cron", 40, 20, 1, "busy", 50, 20)),
    (SCHED_SWITCH, 20000, ("busy", 50, 20, 0, "swapper/0", 0, 20)),
]


class TrackedHtmlTest(HtmlCase):
    """The processes a session tracked, which the trace's env names (tracery_tracked_pid), come first, after those
    named with --focus."""

    def roots(self, env, *options):
        trace = os.path.join(self.tmp, f"tracked-{len(os.listdir(self.tmp))}")
        forge_stream(os.path.join(trace, "kernel"), "kernel", "", KERNEL_CLASSES, TRACKED_EVENTS, kernel_event, env)
        out = trace + ".html"
        tracery("export", "--format", "html", *options, trace, out)
        self.b.open(out)
        rows = self.b.js("tracery.rows")
        labels = [r["label"] for r in rows]
        return [r["label"] for r in rows if r["kind"] in (1, 4)], labels

    def test_tracked_processes_first(self):
        # without the env: the CPU, then the processes folded, the busiest first
        roots, _ = self.roots("")
        self.assertEqual(roots, ["CPU 0", "busy 50", "cron 40", "kworker 30"])
        # tracked: before the CPU, unfolded, the busiest first; "fit" shows their activity
        roots, labels = self.roots('tracery_tracked_pid = "30,40";')
        self.assertEqual(roots, ["cron 40", "kworker 30", "CPU 0", "busy 50"])
        self.assertIn("kworker 30", labels[labels.index("kworker 30") + 1:], "its thread shown")
        self.assertNotIn("busy 50", labels[labels.index("busy 50") + 1:], "busy's process folded")
        origin = self.b.js("Number(tracery.model.origin)")
        self.assertEqual(self.b.js("tracery.activity"), [9000 - origin, 10500 - origin])
        # --focus before them
        roots, _ = self.roots('tracery_tracked_pid = "30,40";', "--focus", "kworker")
        self.assertEqual(roots, ["kworker 30", "cron 40", "CPU 0", "busy 50"])
        # a value that is not a pid is skipped
        roots, _ = self.roots('tracery_tracked_pid = "x,40,-3";')
        self.assertEqual(roots, ["cron 40", "CPU 0", "busy 50", "kworker 30"])


class KernelHtmlTest(HtmlCase):
    """A kernel and user trace of kernel-workload through the daemon (as in export_test.py): getpid calls after a
    kw:before_getpid event each, and round trips between two threads."""

    def setUp(self):
        if os.geteuid() != 0 or not os.path.isdir("/sys/kernel/tracing/events"):
            self.skipTest("kernel tracing needs root and tracefs; skipped")
        super().setUp()
        self.d = DaemonEnv(prefix="tracery-html-daemon-")
        self.addCleanup(self.d.cleanup)
        self.d.start_daemon()

    def test_kernel_and_user_trace(self):
        path, pid = record_kernel_workload(self.d)
        stats = json.loads(tracery("stats", "--json", path).stdout)
        total = stats["total"][0]["count"]
        out = os.path.join(self.d.tmp, "k.html")
        printed = tracery("export", "--format", "html", "--counter", "kw:before_getpid:i", path, out).stderr
        self.assertIn(f"{total} events written to", printed)

        b = self.b
        seconds = b.open(out)
        print(f"kernel+user trace of {total} events: timeline ready in {seconds:.2f} s", flush=True)
        b.screenshot(os.path.join(SHOTS, "kernel.png"))  # as the page opens
        # every event of the trace once, and a counter value per kw:before_getpid
        counts = json.loads(b.js("""JSON.stringify((() => {
          const m = tracery.model, n = {};
          for (const tr of m.tracks) if (tr) for (let i = 0; i < tr.n; i++) {
            const k = m.kinds[tr.k[i]]; const key = k.cat === 'counter' ? 'counter' : k.name;
            n[key] = (n[key] || 0) + 1;
          }
          return n; })())"""))
        self.assertEqual(counts["kw:before_getpid"], 200)
        self.assertEqual(counts["counter"], 200)
        self.assertGreater(counts["sched_switch"], 200)
        self.assertGreaterEqual(sum(counts.values()) - counts["counter"], total)
        rows = b.js(INK)
        cpus = [r for r in rows if r["kind"] == 4]
        self.assertTrue(cpus, rows)
        self.assertTrue(any(r["ink"] > 100 for r in cpus), f"the CPU tracks draw their threads: {cpus}")
        labels = [r["label"] for r in b.js("tracery.rows")]
        self.assertIn("system calls", labels)
        # Its process, then its main thread: named kernel-workload, or kw-ping, the name the main thread gives
        # itself, when that is the first name the trace tells (a matter of timing: the state dump's moment).
        names = {f"kernel-workload {pid}", f"kw-ping {pid}"}
        self.assertTrue(names & set(labels), labels)
        self.assertIn("kw:before_getpid.i", labels)  # the counter track

        text = self.click_event("kw:before_getpid")
        self.assertTrue(any(n in text for n in names), text)  # its thread's track
        # The first call's field, or a neighbour's: the calls come microseconds apart, and the click picks the
        # event nearest its pixel.
        m = re.search(r"\ni\t(\d+)$", text, re.M)
        self.assertTrue(m, text)
        self.assertLess(int(m.group(1)), 200)
        text = self.click_event("getpid")
        self.assertIn("duration", text)
        self.assertIn("system calls", text)
        text = self.click_event("sched_switch")
        self.assertIn("running", text)
        self.assertIn("next_comm", text)

        # its process first (it has user events), its thread states drawn
        self.assertRegex(labels[0], rf"^(kernel-workload|kw-ping) {pid}\b")
        b.js("tracery.resetView(), tracery.view.scrollY = 0, 1")
        rows = b.js(INK)
        self.assertGreater(rows[0]["ink"], 100, rows[0])

        b.type_search("kw-pong")
        self.assertGreater(b.js("tracery.matches"), 100)  # the switches to it, its user events
        b.js("document.getElementById('tl-search').value = ''")
        b.type_search("getpid")
        self.assertGreaterEqual(b.js("tracery.matches"), 400)  # kw:before_getpid and the calls' begins and ends
        self.check_zoom_and_pan()

    def test_a_tracked_process_first(self):
        """A kernel trace alone (no user events) of the workload tracked by pid: the trace's env names it,
        babeltrace2 reads the trace without a word on stderr, and the timeline shows its process first."""
        path = os.path.join(self.d.tmp, "t")
        self.d.tracery("create", "t", "--output", path)
        self.d.tracery("enable-event", "-k", "sched_switch,sched_waking,sched_wakeup", "-s", "t")
        self.d.tracery("enable-event", "-k", "--syscall", "getpid", "-s", "t")
        pid = run_kernel_workload(self.d, "t", 50, track=True)
        with open(os.path.join(path, "kernel", "metadata")) as f:
            self.assertIn(f'\ttracery_tracked_pid = "{pid}";\n', f.read())
        r = subprocess.run(["babeltrace2", path], capture_output=True, text=True, timeout=120)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertIn("syscall_entry_getpid", r.stdout)
        out = os.path.join(self.d.tmp, "t.html")
        tracery("export", "--format", "html", path, out)
        self.b.open(out)
        roots = [r["label"] for r in self.b.js("tracery.rows") if r["kind"] in (1, 4)]
        self.assertRegex(roots[0], rf"^(kernel-workload|kw-ping) {pid}\b", roots)
        self.assertTrue(roots[1].startswith("CPU "), roots)


if __name__ == "__main__":
    unittest.main()

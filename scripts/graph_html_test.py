#!/usr/bin/env python3
"""`aotc graph` pictures, opened in Debian's headless Chromium.

    graph_html_test.py AOTC SRCROOT

Draws pictures of several models and an artifact (node view, kernel view, a
model with unsupported ops at --stage captured, an ONNX model, a
dynamic-shape model), then opens each HTML file in headless Chromium through
the DevTools protocol (--remote-debugging-pipe) and uses it as a person
would: it counts the drawn nodes against the page's data, searches, presses
Enter, clicks a node and a kernel, zooms with the wheel and pans by
dragging, checking what the page shows after each.  Any console error,
uncaught exception or failed resource load fails the test.  The SVG files are
parsed as XML; the DOT files are checked for the classes they must draw.

Exits 0 when every check passed; prints each failure and exits 1 otherwise;
exits 77 (CTest: skipped, never passed) when Chromium is missing
(scripts/install-deps.sh installs it).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

AOTC, ROOT = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


def aotc(*args, expect=0):
    p = subprocess.run([AOTC, *args], capture_output=True, text=True, timeout=600)
    if p.returncode != expect:
        failures.append(f"aotc {' '.join(args)}: exit {p.returncode}, expected {expect}: {p.stderr.strip()[:400]}")
        print("FAIL:", failures[-1], flush=True)
    return p


class Chromium:
    """A headless Chromium driven over --remote-debugging-pipe (fds 3 and 4)."""

    def __init__(self, binary, profile):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # The child's fds 3 and 4 are set up in preexec_fn, after fork.
        def fds():
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)  # neither clobbers the other
            os.dup2(a, 3)
            os.dup2(b, 4)
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
             "--disable-extensions", "--window-size=1400,900", f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, pass_fds=(3, 4))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None

    def send(self, method, params=None, session=True, timeout=60):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            m = self.read(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})

    def read(self, deadline):
        while b"\0" not in self.buf:
            if time.time() > deadline:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        m = json.loads(raw)
        if "method" in m:
            self.events.append(m)
        return m

    def wait_event(self, name, timeout=60):
        deadline = time.time() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e["method"] == name:
                    del self.events[i]
                    return e
            self.read(deadline)

    def open(self, url):
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.send(domain + ".enable")
        self.events.clear()
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")
        return target

    def eval(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr[:80]}: {r['exceptionDetails'].get('text')} "
                               f"{r['exceptionDetails'].get('exception', {}).get('description', '')}")
        return r["result"].get("value")

    def errors(self):
        """Console errors, uncaught exceptions and failed loads since the page opened."""
        # Drain what has arrived.
        try:
            self.send("Runtime.evaluate", {"expression": "0"})
        except Exception:
            pass
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                out.append("exception: " + d.get("exception", {}).get("description", d.get("text", "")))
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                out.append(f"console.{p['type']}: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"]))
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                out.append(f"log {p['entry']['level']}: {p['entry']['text']}")
            elif e["method"] == "Network.loadingFailed":
                out.append(f"failed load: {p.get('errorText')}")
        return out

    def close_target(self, target):
        self.session = None
        self.send("Target.closeTarget", {"targetId": target}, session=False)

    def quit(self):
        try:
            self.send("Browser.close", session=False, timeout=10)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# What the page shows, read back by the checks below.
PAGE_STATE = """(() => {
  const data = JSON.parse(document.getElementById('aotc-data').textContent);
  const nodes = [...document.querySelectorAll('#aotc-canvas g.node')];
  const clusters = [...document.querySelectorAll('#aotc-canvas g.cluster')];
  return {nodes: nodes.map(n => n.id), clusters: clusters.map(c => c.id), items: Object.keys(data.items),
          classes: nodes.map(n => n.getAttribute('class')), legend: document.getElementById('aotc-legend').textContent,
          kernels: Object.keys(data.kernels), viewBox: document.querySelector('#aotc-canvas svg').getAttribute('viewBox')};
})()"""


def search(chrome, query):
    return chrome.eval(f"""(() => {{
      const s = document.getElementById('aotc-search');
      s.value = {json.dumps(query)};
      s.dispatchEvent(new Event('input'));
      const marked = document.querySelectorAll('.aotc-match').length;
      s.dispatchEvent(new KeyboardEvent('keydown', {{key: 'Enter'}}));
      const sel = document.querySelector('.aotc-selected');
      return {{count: document.getElementById('aotc-count').textContent, marked,
               selected: sel ? sel.id : null, details: document.getElementById('aotc-details').textContent}};
    }})()""")


def click(chrome, element_id):
    return chrome.eval(f"""(() => {{
      const el = document.getElementById({json.dumps(element_id)});
      const shape = el.querySelector('polygon, ellipse, path, text');
      (shape || el).dispatchEvent(new MouseEvent('click', {{bubbles: true}}));
      const pre = document.getElementById('aotc-kernel-source');
      const h = document.querySelector('#aotc-details h2');
      return {{title: h ? h.textContent : null, details: document.getElementById('aotc-details').textContent,
               kernel: pre ? pre.textContent : null,
               selected: [...document.querySelectorAll('.aotc-selected')].map(e => e.id)}};
    }})()""")


def zoom_and_pan(chrome):
    return chrome.eval("""(() => {
      const svg = document.querySelector('#aotc-canvas svg');
      const r = svg.getBoundingClientRect();
      const before = svg.getAttribute('viewBox');
      svg.dispatchEvent(new WheelEvent('wheel', {deltaY: -100, clientX: r.left + r.width / 2, clientY: r.top + r.height / 2,
                                                   bubbles: true, cancelable: true}));
      const zoomed = svg.getAttribute('viewBox');
      svg.dispatchEvent(new PointerEvent('pointerdown', {clientX: 300, clientY: 300, bubbles: true}));
      window.dispatchEvent(new PointerEvent('pointermove', {clientX: 360, clientY: 340, bubbles: true}));
      window.dispatchEvent(new PointerEvent('pointerup', {clientX: 360, clientY: 340, bubbles: true}));
      const panned = svg.getAttribute('viewBox');
      document.getElementById('aotc-fit').click();
      return {before, zoomed, panned, fit: svg.getAttribute('viewBox')};
    })()""")


def main():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("graph_html_test: SKIPPED: no chromium on this machine (scripts/install-deps.sh installs it)")
        return 77
    work = tempfile.mkdtemp(prefix="aotc-graph-html-")
    fx = os.path.join(ROOT, "testdata", "fx")
    conf = os.path.join(ROOT, "testdata", "conformance")
    unsupported = os.path.join(ROOT, "testdata", "errors", "inputs", "located_unsupported.json")
    art = os.path.join(work, "mlp_artifact")
    aotc("compile", os.path.join(fx, "mlp.json"), "-o", art, "--no-cache")

    # name -> (aotc graph arguments, the checks for its page)
    cases = {
        "mlp_program": [os.path.join(fx, "mlp.json")],
        "batchnorm_train_program": [os.path.join(conf, "batchnorm_train.json")],
        "batchnorm_train_kernels": [os.path.join(conf, "batchnorm_train.json"), "--view", "kernel"],
        "mlp_artifact": [art],
        "mlp_artifact_backward": [art, "--stage", "backward"],
        "unsupported_captured": [unsupported, "--stage", "captured"],
        "onnx_unsupported_captured": [os.path.join(ROOT, "testdata", "onnx", "unsupported.onnx"), "--stage", "captured"],
        # mlp.onnx has a symbolic batch dim: a dynamic-shape program.  Trained:
        # its forward alone is two GEMMs whose bias and relu are epilogues
        # (Note [GEMM relu epilogue]), with no kernel of aotc's to draw.
        "onnx_mlp_program": [os.path.join(ROOT, "testdata", "onnx", "mlp.onnx"), "--train"],
        "joint": [os.path.join(fx, "inplace_chain.json"), "--stage", "functionalize-joint"],
    }

    for name, args in cases.items():
        for fmt in ("dot", "svg", "html"):
            out = os.path.join(work, f"{name}.{fmt}")
            aotc("graph", *args, "--format", fmt, "-o", out)
        dot = open(os.path.join(work, f"{name}.dot")).read() if os.path.exists(os.path.join(work, f"{name}.dot")) else ""
        if os.path.exists(os.path.join(work, f"{name}.svg")):
            try:
                ET.parse(os.path.join(work, f"{name}.svg"))
            except ET.ParseError as e:
                check(False, f"{name}.svg is not well-formed XML: {e}")
        if name.endswith("_program") or name.startswith("mlp_artifact"):
            check("cluster_" in dot and "class=\"cluster-kernel-" in dot, f"{name}: DOT draws kernels as clusters")
        if name in ("mlp_program", "batchnorm_train_program", "mlp_artifact"):
            check('class="saved"' in dot, f"{name}: DOT draws saved tensors")
        if name == "batchnorm_train_program":
            check('class="epilogue"' in dot and 'label="writes"' in dot, f"{name}: DOT draws the epilogue copy into the running stats")
        if name == "mlp_program":
            check('class="recompute"' in dot, f"{name}: DOT marks nodes the backward recomputes")
            check('class="backward"' in dot and 'class="forward"' in dot, f"{name}: forward and backward nodes apart")
        if "unsupported" in name:
            check('class="unsupported"' in dot, f"{name}: DOT highlights the unsupported ops")

    # The generated IR-level pictures name source lines.
    located = open(os.path.join(work, "unsupported_captured.dot")).read()
    check("gen_located.py:24" in located, "captured picture shows the user's source lines")

    profile = tempfile.mkdtemp(prefix="aotc-chromium-")
    chrome = Chromium(chromium, profile)
    try:
        for name in cases:
            html = os.path.join(work, f"{name}.html")
            if not os.path.exists(html):
                continue
            target = chrome.open("file://" + html)
            state = chrome.eval(PAGE_STATE)
            check(len(state["nodes"]) > 0, f"{name}: the page draws nodes")
            missing = [n for n in state["nodes"] if n not in state["items"]]
            check(not missing, f"{name}: every drawn node has details ({missing[:3]} have none)")
            drawn = set(state["nodes"]) | set(state["clusters"])
            check(all(i in drawn for i in state["items"]), f"{name}: every node of the data is drawn")
            # Search for an op the picture has, press Enter: it is selected and shown.
            query = {"unsupported_captured": "i0", "onnx_unsupported_captured": "unsupported"}.get(name, "add" if "mlp" in name else "mul")
            if name.endswith("kernels"):
                query = "k_"
            r = search(chrome, query)
            check(r["marked"] > 0 and "match" in r["count"], f"{name}: searching '{query}' marks nodes ({r})")
            check(r["selected"] is not None and len(r["details"]) > 20, f"{name}: Enter selects the first match and shows it ({r['selected']})")
            # Click a node computed by a kernel: its op, shapes and the kernel's source.
            kernel_nodes = chrome.eval("""(() => { const d = JSON.parse(document.getElementById('aotc-data').textContent);
                return Object.keys(d.items).filter(k => d.items[k].info.kernel && d.kernels[d.items[k].info.kernel] !== undefined
                                                        && document.getElementById(k)); })()""")
            if name.endswith("_program") or name.endswith("_kernels") or name.startswith("mlp_artifact"):
                if check(kernel_nodes, f"{name}: some node names its kernel"):
                    c = click(chrome, kernel_nodes[0])
                    check(c["kernel"] is not None and "__global__" in c["kernel"], f"{name}: a click shows the kernel source")
                    check(c["selected"] == [kernel_nodes[0]], f"{name}: the clicked node is selected ({c['selected']})")
                    check(("source" in c["details"] or "step" in c["details"]) and ("f32" in c["details"] or "k_" in c["details"]),
                          f"{name}: the details give shapes and the step ({c['details'][:200]})")
            if name in ("mlp_program", "mlp_artifact"):
                # A saved tensor links to the forward node that computed it.
                linked = chrome.eval("""(() => { const d = JSON.parse(document.getElementById('aotc-data').textContent);
                    return Object.keys(d.items).filter(k => d.items[k].link); })()""")
                if check(linked, f"{name}: saved tensors link to their forward nodes"):
                    click(chrome, linked[0])
                    after = chrome.eval("""(() => { document.getElementById('aotc-link').click();
                        return [...document.querySelectorAll('.aotc-selected')].map(e => e.id); })()""")
                    check(len(after) == 1 and after[0].startswith("f_"), f"{name}: the link selects the forward node ({after})")
            if name.endswith("_kernels"):
                # Parameters and buffers are named in the details of the steps
                # that read or write them, not drawn.
                rw = chrome.eval("""(() => { const d = JSON.parse(document.getElementById('aotc-data').textContent);
                    const v = Object.values(d.items);
                    return {reads: v.some(i => (i.info.reads || []).includes('%weight')),
                            writes: v.some(i => (i.info.writes || []).includes('%running_mean')),
                            params: v.some(i => i.legend.startsWith('parameter'))}; })()""")
                check(rw["reads"] and rw["writes"] and not rw["params"], f"{name}: steps list the parameters they read and write ({rw})")
            if "unsupported" in name:
                check(any("unsupported" in (c or "") for c in state["classes"]), f"{name}: unsupported nodes carry their class in the SVG")
                check("unsupported op" in state["legend"], f"{name}: the legend names unsupported ops")
                bad = chrome.eval("""(() => { const d = JSON.parse(document.getElementById('aotc-data').textContent);
                    return Object.keys(d.items).filter(k => d.items[k].info.unsupported); })()""")
                if check(bad, f"{name}: the data marks unsupported nodes"):
                    c = click(chrome, bad[0])
                    check("unsupported" in c["details"], f"{name}: a click on an unsupported node says so")
                    if name == "unsupported_captured":
                        check("gen_located.py" in c["details"], f"{name}: the details give the source line")
            z = zoom_and_pan(chrome)
            check(z["zoomed"] != z["before"], f"{name}: the wheel zooms ({z})")
            check(z["panned"] != z["zoomed"], f"{name}: dragging pans ({z})")
            home = [float(x) for x in state["viewBox"].split()]
            check(all(abs(a - b) < 0.01 for a, b in zip(home, [float(x) for x in z["fit"].split()])),
                  f"{name}: fit restores the whole graph ({state['viewBox']} vs {z['fit']})")
            errs = chrome.errors()
            check(not errs, f"{name}: console errors: {errs}")
            chrome.close_target(target)
    finally:
        chrome.quit()
        shutil.rmtree(profile, ignore_errors=True)

    # Mistakes get one line and a non-zero exit, and write nothing.
    out = os.path.join(work, "never.html")
    p = aotc("graph", art, "--stage", "functionalize", "--format", "html", "-o", out, expect=1)
    check("needs the model file" in p.stderr and not os.path.exists(out), "an artifact at a pre-partition stage is refused")
    p = aotc("graph", os.path.join(fx, "mlp.json"), "--stage", "functionalize", "--view", "kernel", "-o", out, expect=1)
    check("kernel view" in p.stderr and not os.path.exists(out), "--view kernel on a stage without code is refused")
    p = aotc("graph", os.path.join(fx, "mlp.json"), "--format", "ir", "--view", "kernel", expect=1)
    check("--view kernel" in p.stderr, "--view kernel with --format ir is refused")
    p = aotc("graph", os.path.join(fx, "mlp.json"), "--format", "png", expect=2)
    leftovers = [f for f in os.listdir(work) if ".tmp-" in f]
    check(not leftovers, f"no temporaries left behind ({leftovers})")

    if failures:
        print(f"graph_html_test: {len(failures)} failure(s)")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print(f"graph_html_test: {len(cases)} pictures drawn in 3 formats, every HTML page used in headless Chromium: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""terminal_test.py AOTC ROOT: what aotc shows on a terminal (issue 16 items
1 and 4), run under a pseudo-terminal: `aotc batch` draws a progress line
(counts, ETA, the models compiling) and `aotc run` one for its long work (the
emulator's first host compile, the program's steps); both clear it when done
and show nothing of it off a terminal or with -q."""
import os
import pty
import subprocess
import sys
import tempfile

FAILS = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILS.append(what)


def on_tty(argv):
    """(exit status, everything the process wrote to its terminal)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    chunks = []
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode(errors="replace")


def main():
    aotc, root = sys.argv[1], os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="aotc-tty-")
    fx = os.path.join(root, "testdata", "fx")
    models = [os.path.join(fx, m) for m in ("mlp.json", "matmul_chain.json", "buffer_mutation.json")]
    common = ["--arch", "sm_90", "--cache-dir", os.path.join(tmp, "cache"), "-j", "2"]

    rc, tty = on_tty([aotc, "batch"] + models + ["-o", os.path.join(tmp, "zoo")] + common)
    check(rc == 0 and "\r\x1b[K[" in tty and "3/3" in tty and "ETA" in tty, "batch: a progress line with counts and an ETA")
    check(all(f"ok     {m}" in tty for m in models), "batch: the lines per model above it")
    rc, tty = on_tty([aotc, "-q", "batch"] + models + ["-o", os.path.join(tmp, "zoo-q")] + common)
    check(rc == 0 and "\x1b" not in tty, "batch -q: no progress line")

    art = os.path.join(tmp, "zoo", "mlp")
    inputs = os.path.join(fx, "mlp.inputs.safetensors")
    out = os.path.join(tmp, "out.safetensors")
    # A fresh emulator cache: the host compile takes seconds, long enough to show.
    run = [aotc, "run", art, "--inputs", inputs, "--grad-outputs", inputs, "--backend", "emulate", "--cache-dir", os.path.join(tmp, "emu"),
           "--out", out]
    rc, tty = on_tty(run)
    if rc:
        print(tty)
    check(rc == 0 and "[host-compiling" in tty and "kernels (once per artifact)]" in tty, "run: a progress line for the host compile")
    check(tty.rstrip(" ").endswith("\r\x1b[K") or tty.endswith("\x1b[K"), "run: the line is cleared at the end")
    r = subprocess.run(run[:-6] + ["--backend", "emulate", "--cache-dir", os.path.join(tmp, "emu2"), "--out", out], capture_output=True, text=True)
    if r.returncode:
        print(r.stderr)
    check(r.returncode == 0 and "\x1b" not in r.stdout + r.stderr and r.stderr == "", "run off a terminal: nothing on stderr")
    print("terminal_test:", "FAILED" if FAILS else "all passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())

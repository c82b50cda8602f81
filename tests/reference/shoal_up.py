"""`shoal up` as a child process for the Python checks that drive a whole
cluster (bench/cuda/cluster_check.py, transformers_fleet_check.py,
transformers_image_check.py): started with a directory of profiles, returned
once it prints its banner, stopped with Ctrl-C as a person would; a JSON POST
to it; and a check run against it model by model."""
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request


def start(shoal, profile_dir, work, port, extra=()):
    """`shoal up` on `port`, its data under `work`; None if it exits before its banner."""
    cmd = [shoal, "up", "--models-dir", profile_dir, "--data-dir", os.path.join(work, "var"),
           "--port", str(port), "--worker-metrics-port", "-1", *extra]
    print("shoal_up: " + " ".join(cmd), file=sys.stderr, flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    up = threading.Event()

    def pump():  # the cluster's log to ours; the banner is the event waited on
        for line in proc.stdout:
            sys.stderr.write("  up| " + line)
            if line.startswith("Shoal is up"):
                up.set()
        up.set()

    threading.Thread(target=pump, daemon=True).start()
    up.wait(timeout=300)
    return proc if proc.poll() is None else None


def stop(proc):
    """Ctrl-C (drain, then stop); killed if it has not stopped within a minute."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def post(url, body, timeout=60):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def register(url, name, path):
    """POST /v1/admin/models {"path", "id"}: a model directory registered as a user would; its spec."""
    return post(url + "/v1/admin/models", {"path": path, "id": name}, timeout=300)


def check_each(shoal, profile_dir, work, port, names, check, matched):
    """`shoal up`, then check(url, name) -> (ok, detail) for each of `names`:
    a line each ("NAME: ok: detail"), an exception counted as a failure, and
    a last line "K/N models MATCHED". Exit status: 0 when every one passed."""
    proc = start(shoal, profile_dir, work, port)
    if proc is None:
        print("shoal_up: shoal up did not come up", file=sys.stderr, flush=True)
        return 1
    failed = 0
    url = f"http://127.0.0.1:{port}"
    try:
        for n in names:
            try:
                ok, detail = check(url, n)
            except Exception as e:  # a model the library cannot load, or a failed request
                ok, detail = False, f"{type(e).__name__}: {e}"
            print(f"{n}: {'ok' if ok else 'FAILED'}: {detail}", flush=True)
            failed += not ok
    finally:
        stop(proc)
    print(f"{len(names) - failed}/{len(names)} models {matched}", flush=True)
    return 0 if failed == 0 else 1

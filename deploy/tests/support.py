"""Helpers of the deployment tests (deploy/tests/*.py): the emulator, its fault rules and
request log, and running a command the way a scheduler would.

A scheduler's paths (/usr/local/bin, /var/lib, /etc/dray/...) are given to each run in a
private mount namespace (`unshare --mount`, root only): the test's folders are bind-mounted
there, so the command, arguments and files are exactly the recipe's and the machine's own
folders are never touched.
"""

import json
import os
import re
import shlex
import subprocess
import tempfile
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMESTAMPED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z \S")


class Emulator:
    """Emulator/emulator.py on a free loopback port, stopped by `stop()`."""

    def __init__(self):
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            ["python3", os.path.join(ROOT, "Emulator", "emulator.py"), "--port", "0"],
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        first = self.process.stdout.readline()
        if "listening on " not in first:
            self.stop()
            raise SystemExit(f"the platform emulator did not start: {first}")
        self.url = first.split("listening on ", 1)[1].strip()

    def admin(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + "admin/" + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read() or b"null")

    def wait_for_request(self, path, process):
        """Polls the request log until a request for `path` arrived; fails when `process`
        ends first (it would then never come)."""
        while not any(r["path"] == path for r in self.admin("GET", "requests")):
            if process.poll() is not None:
                raise SystemExit(f"the run ended ({process.returncode}) before it asked for {path}:\n"
                                 + process.stdout.read())
            try:
                process.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass

    def stop(self):
        self.process.terminate()
        self.process.wait()


def namespaced(binds, argv):
    """`argv` in a private mount namespace where each (source, target) of `binds` is
    bind-mounted; targets must exist."""
    script = " && ".join(f"mount --bind {shlex.quote(s)} {shlex.quote(t)}" for s, t in binds)
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            script + ' && exec "$@"', "sh"] + argv


def as_scheduler(argv, environment, cwd, user=None):
    """`argv` as a scheduler starts it: a new session without a terminal, only
    `environment`, in `cwd`, as `user` (uid:gid) when given."""
    command = ["env", "-i"] + [f"{k}={v}" for k, v in environment.items()]
    command += ["sh", "-c", 'cd "$0" && exec "$@"', cwd] + argv
    if user:
        uid, gid = user.split(":")
        command = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"] + command
    return ["setsid"] + command


def start(argv):
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def finish(process):
    output, _ = process.communicate(timeout=300)
    return process.returncode, output


def check_plain_lines(what, output, failures):
    """Every log line carries its RFC 3339 time and no control character (the summary of a
    run that did not succeed follows the log lines untimed)."""
    for line in output.splitlines():
        if re.search(r"[\x00-\x08\x0b-\x1f\x7f]", line):
            failures.append(f"{what}: a control character in {line!r}")
        # The summary's lines: a failed run's class and error, the report files it wrote.
        if line.startswith(("job ", "  ", "total: ", "failure: ", "error: ", "junit: ", "prometheus: ", "html: ",
                            "report: ")):
            continue
        if not TIMESTAMPED.match(line):
            failures.append(f"{what}: a log line without its time: {line!r}")


def expect(failures, condition, message):
    if not condition:
        failures.append(message)

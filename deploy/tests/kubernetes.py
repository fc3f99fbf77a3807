#!/usr/bin/env python3
"""deploy/kubernetes/, checked offline, and its CronJob run the way two pods would.

Usage: deploy/tests/kubernetes.py DRAY_BINARY      (root: uses mount namespaces)

1. kubernetes-validate (pinned below, installed into a virtualenv under .build) accepts
   every manifest against the Kubernetes API schemas, strictly (no unknown fields), for
   the oldest release with podFailurePolicy stable (1.31) and the newest it knows.
2. "Pods" run the CronJob's and the backfill Job's containers: their exact command,
   arguments and environment (secretKeyRef values from the Secret), as their runAsUser, the
   ConfigMap and the Secret laid out as files at their mount paths, the state volume shared
   by all, each pod in its own mount namespace. The one deviation is FMP_HOST, pointed at
   the local emulator. Each exit is answered by its Job's podFailurePolicy, and a pod the
   Job controller would replace is replaced:
   - while CronJob pod A waits for its FRUITS answer (held by the emulator), a second tick
     of the CronJob (B) ends as a success (--when-locked succeed: 0, saying who holds the
     job), so its Job completes and nothing runs twice;
   - a backfill pod started meanwhile exits 75, which the backfill's policy Ignores: the
     Job controller's replacement pod exits 75 again while A holds the lock;
   - A stopped by SIGTERM exits 130 (Count); the backfill's next replacement then runs
     (--fresh) and succeeds, and so does the CronJob's replacement C;
   - with FRUITS answering 503 and a day's Retry-After, a tick exits 69 (Count: retried),
     and its replacement, the service back, resumes and succeeds;
   - with FRUITS answering 401 to every token, a tick exits 1 (FailJob: the Job ends, no
     replacement). The policies' answers for 2 are checked too.

The database is a parameter. With DRAY_TEST_POSTGRES_URL (and DRAY_TEST_POSTGRES_PASSWORD)
set, as deploy/tests/run.sh sets them through deploy/tests/with-postgres.sh, the manifest is
used as written, the Secret's database-url and database-password hold those values, and the
rows and runs are checked in the server afterwards. Without them the ConfigMap's
`database:` block is replaced by a SQLite file on the shared volume.
"""

import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

from support import ROOT, Emulator, check_plain_lines, expect, finish, start

KUBERNETES_VALIDATE = "kubernetes-validate==1.37.0"
KUBERNETES_VERSIONS = ["1.31.0", "1.37.0"]
MANIFESTS = os.path.join(ROOT, "deploy", "kubernetes")
VENV = os.path.join(ROOT, ".build", "deploy-tools", "venv")


def validate(failures):
    tool = os.path.join(VENV, "bin", "kubernetes-validate")
    pinned = os.path.join(VENV, "pinned")
    if not os.path.exists(pinned) or open(pinned).read() != KUBERNETES_VALIDATE:
        subprocess.run([sys.executable, "-m", "venv", "--clear", VENV], check=True)
        subprocess.run([os.path.join(VENV, "bin", "pip"), "install", "-q", KUBERNETES_VALIDATE], check=True)
        open(pinned, "w").write(KUBERNETES_VALIDATE)
    files = sorted(glob.glob(os.path.join(MANIFESTS, "*.yaml")))
    for version in KUBERNETES_VERSIONS:
        result = subprocess.run([tool, "--strict", "--quiet", "-k", version] + files, capture_output=True, text=True)
        expect(failures, result.returncode == 0 and not result.stderr.strip(),
               f"kubernetes-validate -k {version}: {result.stdout}{result.stderr}")


def load(name):
    return yaml.safe_load(open(os.path.join(MANIFESTS, name), encoding="utf-8"))


def load_all(name):
    """The documents of a file holding several (fanout-job.yaml: its ConfigMap and Job), by kind."""
    return {d["kind"]: d for d in yaml.safe_load_all(open(os.path.join(MANIFESTS, name), encoding="utf-8"))}


def policy_action(job_spec, container, exit_code):
    """The podFailurePolicy action for a pod whose container ended with `exit_code` (no pod
    conditions), as the Job controller picks it: the first matching rule, else Count; a pod
    that exits 0 succeeds (the policy is not asked)."""
    if exit_code == 0:
        return "Succeeded"
    for rule in job_spec["podFailurePolicy"]["rules"]:
        codes = rule.get("onExitCodes")
        if not codes or codes.get("containerName", container) != container:
            continue
        listed = exit_code in codes["values"]
        if listed == (codes["operator"] == "In"):
            return rule["action"]
    return "Count"


class Pod:
    """The CronJob's container as a process; `root` holds the files its volumes show."""

    def __init__(self, name, work, job_spec, configmap, secret, state, binary, overrides, fields=None):
        self.name = name
        pod = job_spec["template"]["spec"]
        container = pod["containers"][0]
        self.container = container["name"]
        self.user = f'{pod["securityContext"]["runAsUser"]}:{pod["securityContext"]["runAsGroup"]}'
        base = os.path.join(work, name)
        sources = {}
        for volume in pod["volumes"]:
            folder = os.path.join(base, "volumes", volume["name"])
            if "configMap" in volume:
                os.makedirs(folder)
                for key, text in configmap["data"].items():
                    open(os.path.join(folder, key), "w", encoding="utf-8").write(text)
            elif "secret" in volume:
                os.makedirs(folder)
                mode = volume["secret"].get("defaultMode", 0o644)
                for item in volume["secret"]["items"]:
                    path = os.path.join(folder, item["path"])
                    open(path, "w", encoding="utf-8").write(secret["stringData"][item["key"]])
                    os.chmod(path, mode)
                    os.chown(path, 0, pod["securityContext"]["fsGroup"])
            elif "persistentVolumeClaim" in volume:
                folder = state
            elif "emptyDir" in volume:
                os.makedirs(folder)
                os.chown(folder, pod["securityContext"]["runAsUser"], pod["securityContext"]["fsGroup"])
            else:
                raise SystemExit(f"volume {volume['name']}: a kind this test does not lay out")
            sources[volume["name"]] = folder
        environment = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                       "HOSTNAME": name, "HOME": "/var/lib/dray"}
        for variable in container["env"]:
            if "value" in variable:
                environment[variable["name"]] = variable["value"]
            elif "fieldRef" in variable["valueFrom"]:
                environment[variable["name"]] = (fields or {})[variable["valueFrom"]["fieldRef"]["fieldPath"]]
            else:
                reference = variable["valueFrom"]["secretKeyRef"]
                assert reference["name"] == secret["metadata"]["name"], reference
                environment[variable["name"]] = secret["stringData"][reference["key"]]
        environment.update(overrides)
        binds = [(os.path.dirname(binary), "/usr/local/bin")]
        binds += [(sources[m["name"]], m["mountPath"]) for m in container["volumeMounts"]]
        # Mount points that do not exist on this machine appear in an overlay of their
        # nearest existing folder, private to the pod's namespace.
        lines, overlaid = [], []
        for source, target in binds:
            if not os.path.isdir(target):
                parent = target
                while not os.path.isdir(parent):
                    parent = os.path.dirname(parent)
                if parent not in overlaid:
                    overlaid.append(parent)
                    upper, scratch = (os.path.join(base, f"{kind}{len(overlaid)}") for kind in ("upper", "work"))
                    os.makedirs(upper)
                    os.makedirs(scratch)
                    lines.append(f"mount -t overlay overlay -o lowerdir={parent},upperdir={upper},workdir={scratch} "
                                 f"{parent}")
                lines.append(f"mkdir -p {shlex.quote(target)}")
            lines.append(f"mount --bind {shlex.quote(source)} {shlex.quote(target)}")
        uid, gid = self.user.split(":")
        self.argv = (["unshare", "--mount", "--propagation", "private", "sh", "-c", " && ".join(lines) + ' && exec "$@"',
                      "sh", "setsid", "setpriv", f"--reuid={uid}", f"--regid={gid}",
                      f"--groups={pod['securityContext']['fsGroup']}", "env", "-i"]
                     + [f"{k}={v}" for k, v in environment.items()]
                     + container["command"]
                     # $(NAME) in the arguments is the container's variable, as the kubelet expands it.
                     + [re.sub(r"\$\((\w+)\)", lambda m: environment.get(m.group(1), m.group(0)), arg)
                        for arg in container["args"]])

    def start(self):
        return start(self.argv)


def sqlite_manifest(text, job):
    """The ConfigMap's manifest with its database on the shared volume."""
    block = re.compile(r"^database:\n(?:[ ].*\n)+", re.M)
    if not block.search(text):
        raise SystemExit("the ConfigMap's manifest has no database: block")
    return block.sub(f"database: {{ path: /var/lib/dray/{job}.sqlite }}\n", text)


def in_postgres(url, schema):
    """What the job left in `schema`: FRUITS' row count and the runs' statuses, oldest first."""
    query = (f'SELECT (SELECT count(*) FROM "{schema}"."FRUITS__output_table") || \' rows; runs \' || '
             f'(SELECT string_agg(status, \',\' ORDER BY started_at) FROM "{schema}"._dray_runs)')
    environment = dict(os.environ, PGPASSWORD=os.environ.get("DRAY_TEST_POSTGRES_PASSWORD", ""))
    result = subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", url, "-c", query],
                            capture_output=True, text=True, env=environment)
    return result.stdout.strip() if result.returncode == 0 else f"no answer: {result.stderr.strip()}"


def psql_rows(url, sql):
    """One query's rows on the test server, as lists of text."""
    environment = dict(os.environ, PGPASSWORD=os.environ.get("DRAY_TEST_POSTGRES_PASSWORD", ""),
                       PGOPTIONS="-c client_min_messages=warning")
    result = subprocess.run(["psql", "-X", "-At", "-F", "|", "-v", "ON_ERROR_STOP=1", url, "-c", sql],
                            capture_output=True, text=True, env=environment)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip())
    return [line.split("|") for line in result.stdout.splitlines()]


def fanout(failures, work, binary, secret, postgres):
    """fanout-job.yaml's pods as processes: three pods run `dray run --join --run-key UID`
    against PostgreSQL and the REST test server (12 repositories of 5 issues, each answer 1 s
    late); once a pod that does not hold the run lock holds claims it is killed with
    SIGKILL (exit 137: Count, so the Job controller starts a replacement, which joins the
    same run). The others finish its partitions after the lease (shortened to 3 s here, the
    one deviation besides API_BASE_URL), every pod but the killed one exits 0, and the
    issues table holds each issue once. Without PostgreSQL, a pod exits 2 (FailJob),
    saying --join needs it."""
    documents = load_all("fanout-job.yaml")
    configmap, spec = documents["ConfigMap"], documents["Job"]["spec"]
    container = spec["template"]["spec"]["containers"][0]
    expect(failures, "--join" in container["args"] and "--run-key" in container["args"],
           f"fanout-job.yaml: the pods do not run --join --run-key: {container['args']}")
    expect(failures, spec.get("parallelism", 1) > 1, "fanout-job.yaml: parallelism is not above 1")
    job = yaml.safe_load(configmap["data"]["job.yaml"])["job"]
    configmap["data"]["job.yaml"] = configmap["data"]["job.yaml"].replace("lease: 30s", "lease: 3s")
    server = subprocess.Popen([sys.executable, os.path.join(ROOT, "Emulator", "rest_server.py"), "--port", "0",
                               "--repos", "12", "--issues", "5", "--answer-delay", "1"], stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip().rsplit(" ", 1)[1]
    state = os.path.join(work, "fanout-state")
    os.makedirs(state)
    counter = iter(range(1, 100))
    fields = {"metadata.labels['batch.kubernetes.io/controller-uid']": "6f1c2a4e-fanout-test"}

    def pod(what):
        return Pod(f"fanout-{next(counter)}-{what}", work, spec, configmap, secret, state, binary,
                   {"API_BASE_URL": url}, fields)

    def action(status):
        return policy_action(spec, container["name"], status)

    try:
        if not postgres:
            configmap["data"]["job.yaml"] = sqlite_manifest(configmap["data"]["job.yaml"], job)
            status, output = finish(pod("sqlite").start())
            expect(failures, status == 2 and action(2) == "FailJob" and "--join needs a job whose database is PostgreSQL"
                   in output, f"a fan-out pod on SQLite: exit {status} ({action(status)}): {output}")
            return "on SQLite a pod exits 2 (FailJob): --join needs PostgreSQL"
        schema = "fanout"
        psql_rows(postgres, f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}")
        pods = [pod(f"pod{n}").start() for n in range(1, spec["parallelism"] + 1)]
        victim = None
        deadline = time.monotonic() + 120
        while victim is None and time.monotonic() < deadline:
            try:
                holder = psql_rows(postgres, f"SELECT pid FROM {schema}._dray_runs WHERE status = 'running'")
                owners = psql_rows(postgres, f"SELECT owner FROM {schema}._dray_claims WHERE state = 'claimed'")
            except RuntimeError:
                holder, owners = [], []  # the tables are not there yet
            pids = {int(o[0].split(":")[-2]) for o in owners if o and o[0]}
            held = {int(h[0]) for h in holder if h and h[0]}
            victim = next((p for p in pods if p.pid in pids and p.pid not in held and held), None)
            time.sleep(0.05)
        if victim is None:
            for p in pods:
                p.kill()
            outputs = [finish(p)[1] for p in pods]
            failures.append(f"no fan-out pod other than the lock holder was seen holding claims: {outputs}")
            return "not run"
        os.kill(victim.pid, signal.SIGKILL)
        status, _ = finish(victim)
        code = 128 + signal.SIGKILL if status == -signal.SIGKILL else status
        expect(failures, action(code) == "Count", f"the killed pod: exit {code}, policy {action(code)}, not Count")
        # The Job controller replaces the killed pod; the replacement joins the same run.
        pods = [p for p in pods if p is not victim] + [pod("replacement").start()]
        for n, p in enumerate(pods):
            status, output = finish(p)
            expect(failures, status == 0, f"fan-out pod {n + 1}: exit {status}, not 0: {output}")
            check_plain_lines(f"fan-out pod {n + 1}", output, failures)
        rows = psql_rows(postgres, f"SELECT count(*), count(DISTINCT id) FROM {schema}.issues")
        runs = psql_rows(postgres, f"SELECT string_agg(status, ',' ORDER BY seq) FROM {schema}._dray_runs")
        left = psql_rows(postgres, f"SELECT count(*) FROM {schema}._dray_claims WHERE state <> 'done'")
        expect(failures, rows == [["60", "60"]], f"the fan-out's issues table holds {rows}, not 60 distinct issues")
        expect(failures, runs == [["succeeded"]], f"the fan-out's runs: {runs}, not one that succeeded")
        expect(failures, left == [["0"]], f"partitions left unfinished: {left}")
        return ("3 pods shared one run (--join --run-key), one killed -9 while holding claims (137: Count), "
                "the others and its replacement finished the run (exit 0), 60 issues once each")
    finally:
        server.terminate()


def main():
    binary = os.path.abspath(sys.argv[1])
    failures = []
    validate(failures)
    cronjob, configmap, secret = load("cronjob.yaml"), load("configmap.yaml"), load("secret.yaml")
    job_spec = cronjob["spec"]["jobTemplate"]["spec"]
    expect(failures, job_spec["template"]["spec"]["restartPolicy"] == "Never",
           "podFailurePolicy needs restartPolicy: Never")
    manifest = yaml.safe_load(configmap["data"]["job.yaml"])
    postgres = os.environ.get("DRAY_TEST_POSTGRES_URL")
    if postgres:
        secret["stringData"]["database-url"] = postgres
        secret["stringData"]["database-password"] = os.environ.get("DRAY_TEST_POSTGRES_PASSWORD", "")
    else:
        configmap["data"]["job.yaml"] = sqlite_manifest(configmap["data"]["job.yaml"], manifest["job"])

    work = tempfile.mkdtemp(prefix="dray-pods-")
    emulator = Emulator()
    try:
        os.chmod(work, 0o755)
        bin_dir = os.path.join(work, "bin")
        state = os.path.join(work, "state-volume")
        os.makedirs(bin_dir)
        os.makedirs(state)
        shutil.copy(binary, os.path.join(bin_dir, "dray"))
        uid, gid = (job_spec["template"]["spec"]["securityContext"][k] for k in ("runAsUser", "fsGroup"))
        os.chown(state, uid, gid)
        overrides = {"FMP_HOST": emulator.url}
        backfill_spec = load("backfill-job.yaml")["spec"]
        counter = iter(range(1, 100))

        def pod(spec, what):
            return Pod(f"pod-{next(counter)}-{what}", work, spec, configmap, secret, state,
                       os.path.join(bin_dir, "dray"), overrides)

        container = job_spec["template"]["spec"]["containers"][0]["name"]

        def ends(spec, name, process, status_expected, action_expected, says=None):
            """Waits for a pod and checks its exit, what its Job's policy does with it, and
            (optionally) a phrase of its output."""
            status, output = finish(process)
            action = policy_action(spec, container, status)
            expect(failures, status == status_expected, f"{name}: exit {status}, not {status_expected}: {output}")
            expect(failures, action == action_expected,
                   f"{name}: podFailurePolicy for exit {status}: {action}, not {action_expected}")
            if says:
                expect(failures, says in output, f"{name}: does not say {says!r}: {output}")
            check_plain_lines(name, output, failures)
            return output

        fruits = "/api/v1/rpc/FRUITS/"
        emulator.admin("POST", "faults", [{"path": fruits, "times": 1, "delay": 120}])
        first = pod(job_spec, "cron-a").start()
        emulator.wait_for_request(fruits, first)
        # A second tick of the CronJob: the holder does the job; this pod succeeds.
        ends(job_spec, "the CronJob's tick during pod A's run", pod(job_spec, "cron-b").start(), 0, "Succeeded",
             "ends as a success (--when-locked succeed)")
        # The backfill meets the lock: 75, Ignore, and the Job controller's replacement too.
        ends(backfill_spec, "the backfill pod during pod A's run", pod(backfill_spec, "backfill").start(), 75, "Ignore",
             "is already running")
        ends(backfill_spec, "the backfill's replacement pod during pod A's run", pod(backfill_spec, "backfill").start(),
             75, "Ignore", "is already running")
        os.kill(first.pid, signal.SIGTERM)
        ends(job_spec, "pod A, stopped by SIGTERM", first, 130, "Count")
        ends(backfill_spec, "the backfill's next replacement pod", pod(backfill_spec, "backfill").start(), 0, "Succeeded")
        ends(job_spec, "the CronJob's replacement of pod A", pod(job_spec, "cron-c").start(), 0, "Succeeded")

        # Unavailable: 503 with a Retry-After of a day, past retry.max_retry_after: 69, retried.
        emulator.admin("POST", "faults", [{"path": fruits, "status": 503, "retry_after": "86400"}])
        ends(job_spec, "a tick while FRUITS answers 503", pod(job_spec, "cron-d").start(), 69, "Count",
             "failure: unavailable (exit 69)")
        emulator.admin("DELETE", "faults")
        ends(job_spec, "the replacement once FRUITS is back", pod(job_spec, "cron-e").start(), 0, "Succeeded")
        # Permanent: every token refused for FRUITS: 1, the Job fails without a replacement.
        emulator.admin("POST", "faults", [{"path": fruits, "status": 401}])
        ends(job_spec, "a tick while FRUITS refuses every token", pod(job_spec, "cron-f").start(), 1, "FailJob",
             "failure: permanent (exit 1)")
        emulator.admin("DELETE", "faults")
        for spec, name in ((job_spec, "CronJob"), (backfill_spec, "backfill Job")):
            action = policy_action(spec, container, 2)
            expect(failures, action == "FailJob", f"the {name}'s podFailurePolicy for exit 2: {action}, not FailJob")
        fanned = fanout(failures, work, os.path.join(bin_dir, "dray"), secret, postgres)
        reports = glob.glob(os.path.join(state, "reports", f"{manifest['job']}-*.json"))
        expect(failures, len(reports) == 6,
               f"reports on the state volume: {reports} (pod A's, the backfill's, C's, D's, E's and F's)")
        if postgres:
            landed = in_postgres(postgres, manifest["database"]["schema"])
            expected = "5 rows; runs interrupted,succeeded,succeeded,failed,succeeded,failed"
            expect(failures, landed == expected,
                   f"PostgreSQL holds {landed}, not {expected} (pod A, the backfill, C, D, E, F)")
    finally:
        emulator.stop()
        shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print(f"kubernetes: {failure}")
    if not failures:
        database = "PostgreSQL at DRAY_TEST_POSTGRES_URL" if postgres else "SQLite on the shared volume"
        print(f"kubernetes: manifests valid for {', '.join(KUBERNETES_VERSIONS)}; pods ({database}): "
              "a tick during a run succeeded (--when-locked succeed), the backfill and its replacement 75 (Ignore), "
              "SIGTERM 130 (Count), the backfill's and the CronJob's replacements succeeded; "
              "503 gave 69 (Count) and its replacement succeeded; 401 gave 1 (FailJob); "
              f"fan-out: {fanned}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

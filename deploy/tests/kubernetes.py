#!/usr/bin/env python3
"""deploy/kubernetes/, checked offline, and its CronJob run the way two pods would.

Usage: deploy/tests/kubernetes.py DRAY_BINARY      (root: uses mount namespaces)

1. kubernetes-validate (pinned below, installed into a virtualenv under .build) accepts
   every manifest against the Kubernetes API schemas, strictly (no unknown fields), for
   the oldest release with podFailurePolicy stable (1.31) and the newest it knows.
2. Two "pods" run the CronJob's container: its exact command, arguments and environment
   (secretKeyRef values from the Secret), as its runAsUser, the ConfigMap and the Secret
   laid out as files at their mount paths, the state volume shared by both, each pod in its
   own mount namespace. The one deviation is FMP_HOST, pointed at the local emulator.
   While pod A waits for its FRUITS answer (held by the emulator), pod B exits 75 and the
   CronJob's podFailurePolicy says Ignore; A stopped by SIGTERM exits 130 (Count), and a
   third pod resumes and succeeds. The policy's answers for 1 and 2 are checked too.

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


def policy_action(job_spec, container, exit_code):
    """The podFailurePolicy action for a pod whose container ended with `exit_code` (no pod
    conditions), as the Job controller picks it: the first matching rule, else Count."""
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

    def __init__(self, name, work, job_spec, configmap, secret, state, binary, overrides):
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
            else:
                raise SystemExit(f"volume {volume['name']}: a kind this test does not lay out")
            sources[volume["name"]] = folder
        environment = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                       "HOSTNAME": name, "HOME": "/var/lib/dray"}
        for variable in container["env"]:
            if "value" in variable:
                environment[variable["name"]] = variable["value"]
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
                     + container["command"] + container["args"])

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
        pods = [Pod(f"pod-{n}", work, job_spec, configmap, secret, state, os.path.join(bin_dir, "dray"), overrides)
                for n in "abc"]
        container = pods[0].container

        fruits = "/api/v1/rpc/FRUITS/"
        emulator.admin("POST", "faults", [{"path": fruits, "times": 1, "delay": 120}])
        first = pods[0].start()
        emulator.wait_for_request(fruits, first)
        status, output = finish(pods[1].start())
        expect(failures, status == 75, f"pod-b, started while pod-a runs: exit {status}: {output}")
        expect(failures, policy_action(job_spec, container, status) == "Ignore",
               f"podFailurePolicy for pod-b's exit {status}: {policy_action(job_spec, container, status)}, not Ignore")
        check_plain_lines("pod-b", output, failures)
        os.kill(first.pid, signal.SIGTERM)
        status, output = finish(first)
        expect(failures, status == 130, f"pod-a, stopped by SIGTERM: exit {status}: {output}")
        expect(failures, policy_action(job_spec, container, status) == "Count",
               f"podFailurePolicy for exit 130: {policy_action(job_spec, container, status)}, not Count")
        status, output = finish(pods[2].start())
        expect(failures, status == 0, f"pod-c, the retry: exit {status}: {output}")
        for code, action in ((1, "Count"), (2, "FailJob")):
            expect(failures, policy_action(job_spec, container, code) == action,
                   f"podFailurePolicy for exit {code}: {policy_action(job_spec, container, code)}, not {action}")
        reports = glob.glob(os.path.join(state, "reports", f"{manifest['job']}-*.json"))
        expect(failures, len(reports) == 2, f"reports on the state volume: {reports} (pod-a's and pod-c's)")
        if postgres:
            landed = in_postgres(postgres, manifest["database"]["schema"])
            expect(failures, landed == "5 rows; runs interrupted,succeeded",
                   f"PostgreSQL holds {landed}, not FRUITS' 5 rows and pod-a's and pod-c's runs")
    finally:
        emulator.stop()
        shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print(f"kubernetes: {failure}")
    if not failures:
        database = "PostgreSQL at DRAY_TEST_POSTGRES_URL" if postgres else "SQLite on the shared volume"
        print(f"kubernetes: manifests valid for {', '.join(KUBERNETES_VERSIONS)}; two pods ({database}): "
              "one ran, one exited 75 (Ignore); SIGTERM 130 (Count), the retry succeeded")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

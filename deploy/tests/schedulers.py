#!/usr/bin/env python3
"""The systemd units and the crontab line, run the way systemd and cron run them.

Usage: deploy/tests/schedulers.py DRAY_BINARY      (root: uses mount namespaces)

- `systemd-analyze verify` accepts dray@iso-reference.service and .timer, silently;
- the service's ExecStart (specifiers resolved as systemd does: %S=/var/lib, %i=the job),
  run with its EnvironmentFile and WorkingDirectory, as an unprivileged user, without a
  terminal, in a minimal environment, against the emulator: exit 0, and --quiet prints
  nothing;
- the crontab line's command, run by /bin/sh with the crontab's PATH and cron's few
  variables, in the user's home, reading the job's variables from its file: exit 0,
  nothing printed;
- while the service's run holds the job's lock (the emulator holds its COUNTRIES answer),
  the crontab's start exits 75, which the unit's SuccessExitStatus counts as success, with
  plain timestamped lines; SIGTERM stops the held run with 130, also a success for systemd;
- with COUNTRIES answering 503 and a day's Retry-After, the service's run exits 69, which
  the unit's Restart=on-failure starts again after RestartSec; with every token refused
  (401) it exits 1, which RestartPreventExitStatus keeps from restarting.

/usr/local/bin holds the binary and /var/lib the test's folder, inside each run's private
mount namespace only.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile

from support import ROOT, Emulator, as_scheduler, check_plain_lines, expect, finish, namespaced, start

JOB = "iso-reference"
UNITS = os.path.join(ROOT, "deploy", "systemd")
CRONTAB = os.path.join(ROOT, "deploy", "cron", "crontab")
NOBODY = "65534:65534"


def unit_settings(path):
    settings = {}
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            settings[key] = value
    return settings


def systemd_restarts(unit, status):
    """Whether systemd starts the service again after its run exited `status`:
    Restart=on-failure restarts an unclean exit (neither 0 nor in SuccessExitStatus) unless
    RestartPreventExitStatus lists it (systemd.service(5))."""
    success = {0} | {int(code) for code in unit.get("SuccessExitStatus", "").split()}
    prevented = {int(code) for code in unit.get("RestartPreventExitStatus", "").split()}
    return unit.get("Restart") == "on-failure" and status not in success and status not in prevented


def specifiers(text):
    return text.replace("%S", "/var/lib").replace("%i", JOB)


def crontab():
    """(environment, command) of the crontab's one job line."""
    environment, command = {}, None
    for line in open(CRONTAB, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, value = line.partition("=")
        if _ and " " not in name:
            environment[name] = value
        else:
            command = line.split(None, 5)[5]
    return environment, command


def main():
    binary = os.path.abspath(sys.argv[1])
    failures = []
    work = tempfile.mkdtemp(prefix="dray-schedulers-")
    emulator = Emulator()
    try:
        bin_dir = os.path.join(work, "bin")
        var_lib = os.path.join(work, "var-lib")
        home = os.path.join(work, "home")
        jobs = os.path.join(var_lib, "dray", "jobs")
        for folder in (bin_dir, jobs, home):
            os.makedirs(folder)
        shutil.copy(binary, os.path.join(bin_dir, "dray"))
        shutil.copy(os.path.join(ROOT, "jobs", f"{JOB}.yaml"), jobs)
        # The job's variables: the crontab's line reads them from /var/lib/dray/<job>.env,
        # systemd from the unit's EnvironmentFile (as root, before starting the command).
        secrets = {"FMP_HOST": emulator.url, "FMP_USER": "demo", "FMP_PASSWORD": "demo-password"}
        with open(os.path.join(var_lib, "dray", f"{JOB}.env"), "w", encoding="utf-8") as env_file:
            env_file.writelines(f"{k}={v}\n" for k, v in secrets.items())
        for folder in (os.path.join(var_lib, "dray"), home):
            subprocess.run(["chown", "-R", NOBODY, folder], check=True)
        binds = [(bin_dir, "/usr/local/bin"), (var_lib, "/var/lib")]

        # systemd-analyze verify, on instances of the templates.
        verify = os.path.join(work, "units")
        os.makedirs(verify)
        for kind in ("service", "timer"):
            shutil.copy(os.path.join(UNITS, f"dray@.{kind}"), os.path.join(verify, f"dray@{JOB}.{kind}"))
        checked = subprocess.run(
            namespaced(binds, ["systemd-analyze", "verify", f"dray@{JOB}.service", f"dray@{JOB}.timer"]),
            cwd=verify, capture_output=True, text=True)
        expect(failures, checked.returncode == 0 and not (checked.stdout + checked.stderr).strip(),
               f"systemd-analyze verify: exit {checked.returncode}: {checked.stdout}{checked.stderr}")

        unit = unit_settings(os.path.join(UNITS, "dray@.service"))
        success = {0} | {int(code) for code in unit["SuccessExitStatus"].split()}
        # systemd's own environment for a service with User=: PATH, HOME, USER, LOGNAME, SHELL.
        systemd_environment = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin", "HOME": "/var/lib/dray",
                               "USER": "nobody", "LOGNAME": "nobody", "SHELL": "/usr/sbin/nologin",
                               "INVOCATION_ID": "0" * 32, **secrets}
        service = namespaced(binds, as_scheduler(specifiers(unit["ExecStart"]).split(), systemd_environment,
                                                 specifiers(unit["WorkingDirectory"]), NOBODY))
        cron_variables, cron_command = crontab()
        cron_environment = {"HOME": "/var/lib/dray", "LOGNAME": "nobody", "SHELL": "/bin/sh",
                            "PATH": "/usr/bin:/bin", **cron_variables}
        cron = namespaced(binds, as_scheduler(["/bin/sh", "-c", cron_command], cron_environment, "/var/lib/dray",
                                              NOBODY))

        status, output = finish(start(service))
        expect(failures, status == 0 and output == "", f"the service's run: exit {status}, printed {output!r}")
        status, output = finish(start(cron))
        expect(failures, status == 0 and output == "", f"the crontab's run: exit {status}, printed {output!r}")

        # Overlap: the service's run waits for COUNTRIES while the crontab's starts.
        emulator.admin("POST", "reset")
        emulator.admin("POST", "faults", [{"path": "/api/v1/rpc/COUNTRIES/", "times": 1, "delay": 120}])
        held = start(service)
        emulator.wait_for_request("/api/v1/rpc/COUNTRIES/", held)
        status, output = finish(start(cron))
        expect(failures, status == 75 and status in success,
               f"the overlapping crontab run: exit {status} (expected 75, a success for the unit), {output!r}")
        expect(failures, "is already running" in output, f"the overlapping run does not say why it stopped: {output!r}")
        check_plain_lines("the overlapping run", output, failures)
        os.kill(held.pid, signal.SIGTERM)
        status, output = finish(held)
        expect(failures, status == 130 and status in success, f"the stopped service run: exit {status}, {output!r}")
        check_plain_lines("the stopped run", output, failures)

        # A service unavailable (69) is restarted after a delay; a refusal (1) is not.
        expect(failures, unit.get("RestartSec"), "the service sets no RestartSec: a 69 would be restarted at once")
        countries = "/api/v1/rpc/COUNTRIES/"
        for fault, expected, restarted in (({"status": 503, "retry_after": "86400"}, 69, True),
                                           ({"status": 401}, 1, False)):
            emulator.admin("POST", "faults", [{"path": countries, **fault}])
            status, output = finish(start(service))
            expect(failures, status == expected and systemd_restarts(unit, status) == restarted,
                   f"the service's run while COUNTRIES answers {fault['status']}: exit {status} (expected {expected}), "
                   f"restarted by systemd: {systemd_restarts(unit, status)} (expected {restarted}): {output!r}")
            check_plain_lines(f"the run meeting {fault['status']}", output, failures)
        emulator.admin("DELETE", "faults")
    finally:
        emulator.stop()
        shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print(f"schedulers: {failure}")
    if not failures:
        print("schedulers: systemd-analyze verify clean; service and crontab runs succeed quietly; "
              "an overlapping start exits 75, a stopped run 130 (both success for the unit); "
              "69 is restarted after RestartSec, 1 is not")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

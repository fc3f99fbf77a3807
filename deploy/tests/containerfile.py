#!/usr/bin/env python3
"""Checks deploy/Containerfile's runtime stage against a dray binary (make test runs it).

Usage: deploy/tests/containerfile.py DRAY_BINARY

The runtime stage's packages are the names between the "runtime packages: begin" and
"runtime packages: end" comments. The check, on this Debian (the release the stage uses):

- every shared library the binary loads (`ldd`) belongs (`dpkg -S`) to a package the stage
  installs, or to one that such a package depends on (apt installs those with it);
- every package the stage installs owns a library the binary names itself (ELF NEEDED,
  `readelf -d`), except the data packages listed below with the reason they are needed.

Prints one line per problem and exits 1, or prints a summary and exits 0.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONTAINERFILE = os.path.join(ROOT, "deploy", "Containerfile")

# Packages without a library that the binary still needs at run time.
DATA_PACKAGES = {
    "ca-certificates": "libcurl verifies TLS against /etc/ssl/certs/ca-certificates.crt",
}


def runtime_packages():
    text = open(CONTAINERFILE, encoding="utf-8").read()
    block = re.search(r"# runtime packages: begin\n(.*?)# runtime packages: end", text, re.S)
    if not block:
        sys.exit(f"{CONTAINERFILE}: no '# runtime packages: begin' ... 'end' block")
    install = block.group(1).split("--no-install-recommends", 1)[1].split("&&", 1)[0]
    return {word for word in install.replace("\\", " ").split() if not word.startswith("-")}


def loaded_libraries(binary):
    """name -> resolved path of every library `ldd` shows the binary loading."""
    libraries = {}
    for line in subprocess.run(["ldd", binary], check=True, capture_output=True, text=True).stdout.splitlines():
        line = line.strip()
        if "=>" in line:
            name, rest = line.split("=>", 1)
            path = rest.strip().split(" (")[0]
            if path == "not found":
                sys.exit(f"ldd: {name.strip()} not found on this machine")
            libraries[name.strip()] = path
        elif line.startswith("/"):  # the dynamic loader itself
            path = line.split(" (")[0]
            libraries[os.path.basename(path)] = path
    return libraries


def needed(binary):
    dynamic = subprocess.run(["readelf", "-d", binary], check=True, capture_output=True, text=True).stdout
    return set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dynamic))


def owner(path):
    """The Debian package that installed `path` (tried as given, resolved, and across the
    /usr merge, since dpkg records the path the package shipped)."""
    real = os.path.realpath(path)
    candidates = [path, real]
    for candidate in list(candidates):
        candidates.append(candidate[4:] if candidate.startswith("/usr/") else "/usr" + candidate)
    for candidate in candidates:
        found = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        if found.returncode == 0:
            return found.stdout.split(":", 1)[0].split(",")[0].strip()
    sys.exit(f"dpkg -S: no package owns {path}")


def dependencies(packages):
    """`packages` and everything they depend on (Depends, Pre-Depends), as installed here."""
    seen, todo = set(), list(packages)
    while todo:
        package = todo.pop()
        if package in seen:
            continue
        seen.add(package)
        fields = subprocess.run(
            ["dpkg-query", "-W", "-f=${Depends},${Pre-Depends}", package], capture_output=True, text=True
        ).stdout
        for alternative in fields.split(","):
            for choice in alternative.split("|"):
                name = choice.strip().split(" ")[0].split(":")[0]
                if name:
                    todo.append(name)
                    break
    return seen


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    installed = runtime_packages()
    libraries = loaded_libraries(binary)
    owners = {name: owner(path) for name, path in libraries.items()}
    available = dependencies(installed)
    problems = []
    for name, package in sorted(owners.items()):
        if package not in available:
            problems.append(
                f"{name} ({libraries[name]}) comes from {package}, which the runtime stage does not install"
            )
    direct = {owners[name] for name in needed(binary) if name in owners}
    for package in sorted(installed - direct):
        if package not in DATA_PACKAGES:
            problems.append(f"the runtime stage installs {package}, but dray loads no library of it")
    for problem in problems:
        print(f"{CONTAINERFILE}: {problem}")
    if problems:
        return 1
    print(f"Containerfile: {len(libraries)} libraries from {len(set(owners.values()))} packages, "
          f"all installed by the runtime stage's {len(installed)} packages, each used")
    return 0


if __name__ == "__main__":
    sys.exit(main())

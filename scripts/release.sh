#!/usr/bin/env bash
# Builds the release dray and packs it (make release):
#
#   dist/dray-<version>-linux-<arch>.tar.gz          dray, README.md, schemas/*.schema.json
#   dist/dray-<version>-linux-<arch>.tar.gz.sha256   for `sha256sum -c`
#   dist/dray-<version>-linux-<arch>.debug           the binary's symbols and debug information
#
# The packed binary is stripped (strip --strip-all) and names its symbols' file in a
# .gnu_debuglink section (objcopy --only-keep-debug, --add-gnu-debuglink: the file's name and
# CRC), so that gdb, or a backtrace read later, finds them when the .debug file is put beside
# the binary or under /usr/lib/debug (docs/deploy.md, "Debug symbols").
# The binary is optimised and links the Swift runtime and Foundation statically
# (--static-swift-stdlib), so it needs only Debian's C libraries (deploy/Containerfile lists
# them). It is built in .build/static, as Benchmarks/manifest_load.py --static builds it.
# The commit (`git describe --always --dirty`) is baked in for `dray version`; outside a git
# work tree it says "unknown". Prints the tarball's path.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

toolchain_lib=$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")/lib
if [ ! -f "$toolchain_lib/swift_static/linux/static-stdlib-args.lnk" ]; then
  echo "the Swift toolchain at $toolchain_lib has no static Swift runtime (swift_static/linux);" >&2
  echo "install a toolchain from swift.org, whose Linux builds include it" >&2
  exit 1
fi

version=$(sed -n 's/.*public static let current = "\(.*\)"/\1/p' Sources/DrayModel/Version.swift)
commit=$(git describe --always --dirty --abbrev=12 2>/dev/null || true)
name="dray-$version-linux-$(uname -m)"

DRAY_COMMIT=$commit swift build -c release --product dray --static-swift-stdlib --scratch-path .build/static >&2

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name/schemas" dist
install -m 755 .build/static/release/dray "$stage/$name/dray"
objcopy --only-keep-debug "$stage/$name/dray" "dist/$name.debug"
chmod 644 "dist/$name.debug"
strip --strip-all "$stage/$name/dray"
# The link is made from dist/, so that it records the bare name of the .debug file.
(cd dist && objcopy --add-gnu-debuglink="$name.debug" "$stage/$name/dray")
install -m 644 README.md "$stage/$name/README.md"
install -m 644 docs/*.schema.json "$stage/$name/schemas/"
# Same bytes for the same tree: sorted names, no owners, the commit's time (or the newest
# source file's, without git).
mtime=$(git log -1 --format=%cI 2>/dev/null || date -u -r Sources +%Y-%m-%dT%H:%M:%SZ)
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="$mtime" -cf - "$name" |
  gzip -n -9 >"dist/$name.tar.gz"
(cd dist && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
echo "dist/$name.tar.gz"

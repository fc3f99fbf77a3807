#include "BuildInfo.h"

// `make release` sets DRAY_COMMIT (`git describe --always --dirty`) in the environment and
// Package.swift defines it for this file alone. A plain `swift build`, or a build from a
// tarball without .git, leaves it unset.
#ifndef DRAY_COMMIT
#define DRAY_COMMIT ""
#endif

const char *dray_build_commit(void) { return DRAY_COMMIT; }

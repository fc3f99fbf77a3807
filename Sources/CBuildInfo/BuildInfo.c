#include "BuildInfo.h"

// `make release` passes the commit with `-Xcc -DDRAY_COMMIT="..."` (`git describe --always
// --dirty`). A plain `swift build`, or a build from a tarball without .git, leaves it unset.
#ifndef DRAY_COMMIT
#define DRAY_COMMIT ""
#endif

const char *dray_build_commit(void) { return DRAY_COMMIT; }

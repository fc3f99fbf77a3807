#ifndef DRAY_BUILD_INFO_H
#define DRAY_BUILD_INFO_H

// The git commit dray was built from, or "" when the build did not say.
const char *dray_build_commit(void);

#endif

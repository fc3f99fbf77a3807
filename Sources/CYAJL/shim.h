#include <yajl/yajl_parse.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>
#include <yajl/yajl_version.h>

// yajl_config is variadic, which Swift cannot call. Comments are allowed in small documents,
// as yajl's own tree parser allows them (yajl_tree_parse).
static inline int dray_yajl_allow_comments(yajl_handle h) {
  return yajl_config(h, yajl_allow_comments, 1);
}

#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift cannot import; these wrappers bind with it so that
// SQLite copies the bytes before the call returns.
static inline int dray_sqlite3_bind_text_transient(sqlite3_stmt *s, int i, const char *v, int n) {
  return sqlite3_bind_text(s, i, v, n, SQLITE_TRANSIENT);
}
static inline int dray_sqlite3_bind_blob_transient(sqlite3_stmt *s, int i, const void *v, int n) {
  return sqlite3_bind_blob(s, i, v, n, SQLITE_TRANSIENT);
}

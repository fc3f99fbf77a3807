#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift cannot import; these wrappers bind with it so that
// SQLite copies the bytes before the call returns. The 64-bit lengths take any count without
// a narrowing conversion; SQLite answers SQLITE_TOOBIG past its own limit (SQLITE_MAX_LENGTH).
static inline int dray_sqlite3_bind_text_transient(sqlite3_stmt *s, int i, const char *v, sqlite3_uint64 n) {
  return sqlite3_bind_text64(s, i, v, n, SQLITE_TRANSIENT, SQLITE_UTF8);
}
static inline int dray_sqlite3_bind_blob_transient(sqlite3_stmt *s, int i, const void *v, sqlite3_uint64 n) {
  return sqlite3_bind_blob64(s, i, v, n, SQLITE_TRANSIENT);
}

// sqlite3_config is variadic, which Swift cannot call. Turning memory statistics off
// (https://sqlite.org/c3ref/c_config_covering_index_scan.html#sqliteconfigmemstatus) spares
// a global mutex on every allocation; it must run before SQLite initialises.
static inline int dray_sqlite3_disable_memstatus(void) {
  return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

// sync_file_range is a GNU extension the Glibc module does not import; its declaration and
// SYNC_FILE_RANGE_WRITE (2) as in <fcntl.h> (https://man7.org/linux/man-pages/man2/sync_file_range.2.html).
extern int sync_file_range(int fd, long long offset, long long count, unsigned int flags);
// Starts writing the dirty pages of `fd` back to disk without waiting for them: a hint that
// changes no guarantee (nothing waits for it; an fsync still does).
static inline int dray_start_writeback(int fd) {
  return sync_file_range(fd, 0, 0, 2);
}

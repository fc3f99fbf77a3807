internal import CSQLite
internal import DrayTarget
internal import Glibc

extension Database {
  /// Counts the rows inserted through this connection into tables whose names do not start
  /// with `_dray_` (the bookkeeping), and calls `body` with the running count every
  /// `interval` rows, until the returned observer stops.
  ///
  /// Uses SQLite's update hook (https://sqlite.org/c3ref/update_hook.html), which sees rows
  /// of ordinary rowid tables as they are inserted, before the commit; `body` runs on the
  /// inserting thread and must not use this connection. A connection has one update hook, so
  /// one observer at a time.
  public func observeInsertedRows(every interval: Int, _ body: @escaping (Int) -> Void) -> InsertedRowsObserver {
    InsertedRowsObserver(database: self, counter: InsertedRowsObserver.Counter(interval: max(1, interval), body: body))
  }
}

/// Watches a connection's inserts for progress; stops in `stop()` or when released.
public final class InsertedRowsObserver {
  final class Counter {
    let interval: Int
    let body: (Int) -> Void
    var count = 0
    init(interval: Int, body: @escaping (Int) -> Void) {
      self.interval = interval
      self.body = body
    }
  }

  private let database: Database
  private var counter: Unmanaged<Counter>?

  init(database: Database, counter: Counter) {
    self.database = database
    let retained = Unmanaged.passRetained(counter)
    self.counter = retained
    sqlite3_update_hook(
      database.handle,
      { context, operation, _, table, _ in
        guard operation == SQLITE_INSERT, let context, let table else { return }
        // Bookkeeping and journal tables are not the load's rows.
        if strncmp(table, "_dray_", 6) == 0 { return }
        let counter = Unmanaged<Counter>.fromOpaque(context).takeUnretainedValue()
        counter.count += 1
        if counter.count % counter.interval == 0 { counter.body(counter.count) }
      }, retained.toOpaque())
  }

  /// Rows counted so far.
  public var count: Int { counter?.takeUnretainedValue().count ?? 0 }

  /// Removes the hook; later inserts are not counted.
  public func stop() {
    guard let counter else { return }
    sqlite3_update_hook(database.handle, nil, nil)
    counter.release()
    self.counter = nil
  }

  deinit { stop() }
}

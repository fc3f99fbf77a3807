import DrayManifest
import DrayTestSupport
import Testing

/// Validation names every problem of a manifest in one pass (issue 25): no problem waits
/// for another to be fixed, whatever phase finds it (the YAML reader's checks, a step's
/// own keys, the checks across the job).
@Suite struct OnePassValidationTests {
  @Test func independentProblemsInEveryPhaseAreReportedTogether() {
    let text = """
      version: 1
      job: j
      job: k
      steps:
        - id: "bad id"
          sql: "SELECT * FROM {{ tabel }}"
        - table_stream: { resource: A, delta: maybe }
        - http:
            base_url: "http://h/"
            format: xml
            load: { table: t, records: //item }
            paginate: { max_pages: 0, cursor: { param: after } }
            incremental: { cursor: /updated, param: since, initial: 0, lag: soon }
      """
    #expect(
      ManifestText.errors(text) == [
        "job.yaml:3:1: error: duplicate key 'job'; it is already set at line 2",
        "job.yaml:5:5: error: step 'sql-1' (sql) uses the database; add a 'database' block with a 'path' (SQLite) or a 'url' (PostgreSQL)",
        "job.yaml:5:9: error: step id may hold letters, digits, '-', '_' and '.' only, found 'bad id'",
        "job.yaml:6:25: error: step 'sql-1': unknown template '{{ tabel }}'; the one function is: {{ table \"RESOURCE\" \"TABLE\" }}",
        "job.yaml:7:5: error: step 'table_stream-2' (table_stream) calls the platform; add the 'platform' and 'auth' blocks",
        "job.yaml:7:41: error: 'steps.table_stream-2.table_stream.delta' must be true or false, found a string ('maybe')",
        "job.yaml:11:13: error: 'steps.http-3.http.load' fills a table; add a 'database' block with a 'path' (SQLite) or a 'url' (PostgreSQL)",
        "job.yaml:12:30: error: 'steps.http-3.http.paginate.max_pages' must be between 1 and 2147483647, found 0",
        "job.yaml:12:41: error: 'steps.http-3.http.paginate.cursor' needs one of: from, from_last_record",
        "job.yaml:13:20: error: 'steps.http-3.http.incremental' reads a JSON Pointer in each record; it needs format: json",
        "job.yaml:13:71: error: 'steps.http-3.http.incremental.lag' is not a duration: 'soon'; write a number and a unit: 500ms, 30s, 5m, 1h, 7d",
      ])
  }

  /// A `files` step without its connection still says what its action needs.
  @Test func aFilesStepNamesEveryMissingKey() {
    let text = """
      version: 1
      job: j
      platform: { host: "http://h/", environment: e, project: p }
      auth: { username: u, password: password-1234 }
      steps:
        - files: { action: get }
      """
    #expect(
      ManifestText.errors(text) == [
        "job.yaml:6:12: error: missing required key 'connection' in steps.files-1.files",
        "job.yaml:6:12: error: missing required key 'path' in steps.files-1.files (the file on the server for 'get')",
        "job.yaml:6:12: error: missing required key 'local' in steps.files-1.files (the local file for 'get')",
      ])
  }

  /// A loading step with a wrong id is still the step that loads its resource: a template
  /// naming that resource gets no error of its own.
  @Test func aWrongIdDoesNotMakeTemplatesOfItsResourceWrong() {
    let text = """
      \(ManifestText.platformJob)
        - id: load fruits
          table_stream: { resource: FRUITS }
        - sql: DELETE FROM {{ table "FRUITS" "output_table" }}
      """
    #expect(
      ManifestText.errors(text) == [
        "job.yaml:7:9: error: step id may hold letters, digits, '-', '_' and '.' only, found 'load fruits'"
      ])
  }

  /// A `load` or a `body` with a problem of its own is not also reported missing by the
  /// pagination that needs it.
  @Test func aLoadOrBodyWithAProblemOfItsOwnIsNotAlsoMissing() {
    let text = """
      version: 1
      job: j
      database: { path: db.sqlite }
      steps:
        - http: { base_url: "http://h/", load: { table: t, write: merge, primary_key: [id, id] }, paginate: { offset: } }
        - http:
            base_url: "http://h/"
            body: { json: { q: 1 }, form: { a: b } }
            load: { table: u }
            paginate: { cursor: { from: /next, body: /after } }
      """
    #expect(
      ManifestText.errors(text) == [
        "job.yaml:5:86: error: 'steps.http-1.http.load.primary_key' names 'id' twice; list each once",
        "job.yaml:8:37: error: 'steps.http-2.http.body' takes 'json' or 'form', not both",
      ])
  }
}

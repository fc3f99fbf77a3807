internal import DrayModel

/// Reading an `http` load's data contract (`load.contract`, `load.quarantine`, and the old
/// spelling `load.extra`; docs/http.md "Contract").
extension ManifestValidator {
  /// `load.contract`, with `load.extra` read as the old spelling of `new_columns` (`ignore`:
  /// the default with columns, `refuse`: `freeze`); nil (with a diagnostic) when wrong, or
  /// when both spellings are given.
  mutating func readContract(_ f: Fields, format: AnswerFormat, at location: SourceLocation) -> HTTPStep.Contract? {
    var contract = HTTPStep.Contract()
    var ok = true
    if let node = f["contract"] {
      guard let c = reader.fields(node, f.path("contract"), keys: ManifestSchema.httpContract) else { return nil }
      if c["new_columns"] != nil {
        contract.newColumns = reader.choice(c, "new_columns", as: HTTPStep.Rule.self)
        if contract.newColumns == nil { ok = false }
      }
      if c["types"] != nil {
        guard let types = reader.choice(c, "types", as: HTTPStep.TypeRule.self) else { return nil }
        contract.types = types
      } else {
        contract.types = c.defaultValue("types")
      }
      if f["columns"] != nil, contract.newColumns == .evolve, let newColumns = c["new_columns"] {
        reader.error(
          newColumns.location,
          "'\(c.path("new_columns"))': evolve adds a column for each new field, but 'columns' fix the table's columns; "
            + "declare a column for the field, or remove 'columns' to load every field")
        ok = false
      }
    }
    if let extraNode = f["extra"] {
      if f["contract"] != nil {
        reader.error(
          extraNode.location,
          "'\(f.path("extra"))' is the old spelling of '\(f.path("contract")).new_columns'; give only contract "
            + "(extra: refuse is new_columns: freeze; extra: ignore is the default with columns)")
        return nil
      }
      guard let word = reader.string(extraNode, f.path("extra")), ["ignore", "refuse"].contains(word) else {
        if let text = extraNode.scalar?.text, !["ignore", "refuse"].contains(text) {
          reader.error(extraNode.location, "'\(f.path("extra"))' must be ignore or refuse (the old spelling of contract.new_columns)")
        }
        return nil
      }
      if f["columns"] == nil || format != .json {
        reader.error(
          extraNode.location,
          f["columns"] == nil
            ? "'\(f.path("extra"))' says what fields that 'columns' do not name do; without 'columns' every field is loaded"
            : "'\(f.path("extra"))' reads JSON records; it needs format: json")
        return nil
      }
      if word == "refuse" { contract.newColumns = .freeze }
      reader.warn(
        extraNode.location,
        "'\(f.path("extra"))' is deprecated: write '\(f.path("contract")): { new_columns: freeze }' for extra: refuse, "
          + "and nothing for extra: ignore (the default with columns)")
    }
    if let newColumns = contract.newColumns, newColumns != .evolve, f["columns"] != nil, format != .json {
      reader.error(
        f["contract"]?.location ?? location,
        "'\(f.path("contract")).new_columns' with 'columns' reads the fields of JSON records; it needs format: json")
      ok = false
    }
    return ok ? contract : nil
  }

  /// `load.quarantine`: a table name, or `{ table, max_rows, max_share }`; nil (with a
  /// diagnostic) when wrong.
  mutating func readQuarantine(_ node: YAMLNode, _ path: String, table: String?) -> HTTPStep.Quarantine? {
    var quarantine = HTTPStep.Quarantine()
    if node.scalar != nil {
      guard let name = reader.nonEmptyString(node, path) else { return nil }
      quarantine.table = name
    } else {
      guard let q = reader.fields(node, path, keys: ManifestSchema.httpQuarantine) else { return nil }
      var ok = true
      if q["table"] != nil {
        quarantine.table = reader.string(q, "table")
        if quarantine.table == nil { ok = false }
      }
      if q["max_rows"] != nil {
        quarantine.maxRows = reader.integer(q, "max_rows")
        if quarantine.maxRows == nil { ok = false }
      }
      if let shareNode = q["max_share"] {
        let share: Double? =
          switch reader.json(shareNode, q.path("max_share")) {
          case .integer(let i)?: Double(i)
          case .number(let text)?: Double(text)
          default: nil
          }
        if let share, share >= 0, share <= 1 {
          quarantine.maxShare = share
        } else {
          reader.error(shareNode.location, "'\(q.path("max_share"))' is a share of the records: a number from 0 to 1, such as 0.01")
          ok = false
        }
      }
      guard ok else { return nil }
    }
    if let name = quarantine.table {
      let lower = name.lowercased()
      if lower.hasPrefix("_dray") || lower.hasPrefix("sqlite_") {
        reader.error(node.location, "'\(path)': names starting with _dray or sqlite_ are reserved; choose another")
        return nil
      }
      if let table, IdentifierKey(name) == IdentifierKey(table) {
        reader.error(node.location, "'\(path)' names the loaded table itself ('\(table)'); choose another table for the quarantine")
        return nil
      }
    }
    return quarantine
  }
}

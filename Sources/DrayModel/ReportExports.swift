/// `report.openlineage`: where a run's OpenLineage events go (docs/report.md, "OpenLineage").
///
/// One `START` event when the run begins and one `COMPLETE`, `FAIL` or `ABORT` event when it
/// ends (OpenLineage spec 2-0-2, `RunEvent`).
public struct LineageSettings: Sendable, Hashable {
  /// Where the events go.
  public enum Destination: Sendable, Hashable {
    /// POSTed, one event per request, as `application/json` (Marquez: `/api/v1/lineage`).
    case url(String)
    /// Appended to this file, one event per line (JSON Lines); relative to the job folder.
    case path(String)
  }

  /// The namespace of the job's events when the manifest gives none.
  public static let defaultNamespace = "dray"

  public var destination: Destination
  /// The job's namespace in every event (`job.namespace`): `dray` unless given.
  public var namespace: String

  public init(destination: Destination, namespace: String = LineageSettings.defaultNamespace) {
    self.destination = destination
    self.namespace = namespace
  }
}

/// `report.otlp`: where a run's trace goes, over OTLP/HTTP with JSON encoding
/// (docs/report.md, "OpenTelemetry traces"). The standard `OTEL_EXPORTER_OTLP_ENDPOINT` and
/// `OTEL_EXPORTER_OTLP_HEADERS` fill in what the manifest leaves out; they never turn export
/// on by themselves.
public struct OTLPSettings: Sendable, Hashable {
  /// The collector's base URL (`http://collector:4318`); spans are POSTed to
  /// `{endpoint}/v1/traces` (the endpoint as it is when it ends with `/v1/traces`). Nil: `OTEL_EXPORTER_OTLP_ENDPOINT` decides.
  public var endpoint: String?
  /// Header fields sent with every export; every value is a secret (masked in every output).
  public var headers: [HTTPHeader]

  public init(endpoint: String? = nil, headers: [HTTPHeader] = []) {
    self.endpoint = endpoint
    self.headers = headers
  }
}

import CLoadGenerator
import Foundation

/// One run of the HTTP load behind `engage bench ingest` (see CLoadGenerator.h): the settings in
/// Swift, the C strings and the blocking epoll loop kept here.
public struct IngestLoad: Sendable {
    /// Why the load could not run at all (bad settings, nothing to connect to).
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public var host = "127.0.0.1"
    public var port: UInt16
    public var key: String
    public var connections: UInt32 = 16
    public var batch: UInt32 = 100
    public var seconds = 10.0
    /// Requests per second over all connections; 0 is unpaced.
    public var rate = 0.0
    public var tag: UInt32 = 0
    public var stream: UInt32 = 0
    public var randomIDs = false
    public var timeoutSeconds = 10.0
    /// HTTPS when set: the PEM file of the CA the server's certificate must chain to.
    public var caFile: String?
    /// When set: a file written anew with one line per request answered or timed out, `<sent>
    /// <latency> <status>` (sent in microseconds since the Unix epoch, latency in microseconds,
    /// HTTP status, 0 for a timeout), so that back-to-back runs can be merged into percentiles over
    /// any span (Benchmarks/prune.sh).
    public var latencyFile: String?

    public init(port: UInt16, key: String) {
        self.port = port
        self.key = key
    }

    /// Runs the load to its end on a thread of its own (its loop blocks), off the task pool.
    public func run() async throws -> CLoadGenerator_Result {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try runHere() }) }.start()
        }
    }

    private func runHere() throws(Failure) -> CLoadGenerator_Result {
        var options = CLoadGenerator_Options()
        options.port = port
        options.connections = connections
        options.batch = batch
        options.seconds = seconds
        options.rate = rate
        options.tag = tag
        options.stream = stream
        options.random_ids = randomIDs ? 1 : 0
        options.timeout_seconds = timeoutSeconds
        var result = CLoadGenerator_Result()
        var error = [CChar](repeating: 0, count: 256)
        let status = host.withCString { host in
            "/v1/events".withCString { path in
                key.withCString { key in
                    withOptionalCString(caFile) { caFile in
                        withOptionalCString(latencyFile) { latencyFile in
                            options.host = host
                            options.path = path
                            options.key = key
                            options.tls_ca_file = caFile
                            options.latency_file = latencyFile
                            return CLoadGenerator_run(&options, &result, &error, error.count)
                        }
                    }
                }
            }
        }
        guard status == 0 else {
            throw Failure(description: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return result
    }
}

private func withOptionalCString<T>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}

extension CLoadGenerator_Result {
    /// Status and start of the first non-200 answer, or "".
    public var firstProblem: String {
        withUnsafeBytes(of: first_problem) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}

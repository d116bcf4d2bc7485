import CLoadGenerator
import Foundation
import LoadGenerator
import Runtime

/// `engage bench ingest`: HTTP load on a running server's POST /v1/events, for
/// Benchmarks/ingest.sh. The load runs on one epoll thread in C, so that on a machine shared with
/// the server it takes a small part of the CPU (wrk with a Lua body generator took about a third
/// of what the server did per single-event request). Prints one `ingest.result key=value ...`
/// line (latencies in microseconds), and `ingest.problem ...` for the first non-200 answer.
enum IngestLoadBenchmark {
    static let url = Option("url", value: "url", help: "The server, http://IPv4:port or https://IPv4:port.",
                            default: LoadTarget(https: false, address: ListenAddress(host: "127.0.0.1", port: 8080)),
                            defaultText: "http://127.0.0.1:8080", requirement: "expected http://IPv4:port or https://IPv4:port",
                            parse: LoadTarget.init(url:))
    static let caFile = Option<String?>("cacert", value: "file", help: "For an https --url: the PEM CA certificate the server's certificate must chain to.",
                                        validate: Validation("expected a readable file") { FileManager.default.isReadableFile(atPath: $0) })
    static let key = Option<String?>("key", value: "key", help: "Ingest key; better given by the environment, off the command line.",
                                     environment: "ENGAGE_BENCH_KEY", secret: true, validate: CommonOptions.ingestKey)
    static let connections = Option("connections", value: "n", help: "Keep-alive connections.", default: 16, validate: .range(1...10_000))
    static let batch = Option("batch", value: "n", help: "Events per request (1-1000).", default: 100, validate: .range(1...1_000))
    static let seconds = Option("seconds", value: "s", help: "How long requests are sent; those in flight then are awaited.", default: 10.0,
                                validate: Validation("expected 0 < s <= 3600") { $0 > 0 && $0 <= 3600 })
    static let rate = Option("rate", value: "n", help: "Requests per second over all connections; 0 sends as fast as answers come.", default: 0.0,
                             validate: Validation("expected 0 (unpaced) or 0.01 to 10000000 requests/s") { $0 == 0 || (0.01...10_000_000).contains($0) })
    static let tag = Option("tag", value: "n", help: "0-4095, part of every event id: distinguishes a run's phases.", default: 0, validate: .range(0...4095))
    static let stream = Option("stream", value: "n", help: "0-4095, part of every event id: distinguishes generators running side by side.", default: 0,
                               validate: .range(0...4095))
    static let ids = Option("ids", value: "kind", help: "time (time-ordered, as EngageClient makes them) or random.", default: IDKind.time)
    static let latencies = Option<String?>("latencies", value: "file",
                                           help: "Also write each request's line to this file: sent (µs since the Unix epoch), latency (µs), HTTP status (0: timed out).")
    static let timeout = Option("timeout", value: "s", help: "Seconds a request may wait for its answer.", default: 10.0,
                                validate: Validation("expected 0 < s <= 600") { $0 > 0 && $0 <= 600 })

    static let definition = Command(
        name: "ingest",
        abstract: "Send generated events to a running server's POST /v1/events and print what was accepted and how fast (Benchmarks/ingest.sh uses it).",
        options: [url, caFile, key, connections, batch, seconds, rate, tag, stream, ids, timeout, latencies],
        run: run)

    enum IDKind: String, CaseIterable, OptionValue {
        case time, random
    }

    static func run(_ arguments: ParsedArguments) async throws {
        let target = arguments[url]
        var load = IngestLoad(port: UInt16(target.address.port), key: try arguments.required(key))
        load.host = target.address.host
        switch (target.https, arguments[caFile]) {
        case (true, nil):
            throw arguments.usageError(.missingValue, "an https \(url.longName) needs \(caFile.longName) (the CA that signed the server's certificate)")
        case (false, _?):
            throw arguments.usageError(.unexpectedValue, "\(caFile.longName) is for an https \(url.longName)")
        case (true, let file?):
            load.caFile = file
        case (false, nil):
            break
        }
        load.connections = UInt32(arguments[connections])
        load.batch = UInt32(arguments[batch])
        load.seconds = arguments[seconds]
        load.rate = arguments[rate]
        load.tag = UInt32(arguments[tag])
        load.stream = UInt32(arguments[stream])
        load.randomIDs = arguments[ids] == .random
        load.timeoutSeconds = arguments[timeout]
        if let file = arguments[latencies] { try WritableFile.check(file, option: latencies.longName, arguments) }
        load.latencyFile = arguments[latencies]
        let result: CLoadGenerator_Result
        do {
            result = try await load.run()
        } catch {
            throw BenchCommand.BenchError("the load could not run: \(error)")
        }
        print(
            "ingest.result requests=\(result.requests) duration_us=\(result.duration_us) p50_us=\(result.p50_us)"
                + " p90_us=\(result.p90_us) p99_us=\(result.p99_us) max_us=\(result.max_us) mean_us=\(Int(result.mean_us.rounded()))"
                + " accepted=\(result.accepted) duplicates=\(result.duplicates) non200=\(result.non200)"
                + " connect_errors=\(result.connect_errors) read_errors=\(result.read_errors)"
                + " write_errors=\(result.write_errors) timeouts=\(result.timeouts)")
        let problem = result.firstProblem
        if !problem.isEmpty {
            print("ingest.problem " + problem.split(whereSeparator: \.isWhitespace).joined(separator: " "))
        }
    }
}

/// Where `engage bench ingest` sends its load: `http://` or `https://`, a numeric IPv4 host and a port.
struct LoadTarget: Sendable {
    var https: Bool
    var address: ListenAddress

    /// `http://a.b.c.d:port` or `https://a.b.c.d:port` (a trailing slash allowed).
    init?(url: String) {
        let https = url.hasPrefix("https://")
        guard https || url.hasPrefix("http://"), let address = ListenAddress(ipv4URL: url) else { return nil }
        self.init(https: https, address: address)
    }

    init(https: Bool, address: ListenAddress) {
        self.https = https
        self.address = address
    }
}

extension ListenAddress {
    /// `http://a.b.c.d:port` or `https://...` (a trailing slash allowed): a numeric IPv4 host and a port.
    init?(ipv4URL url: String) {
        guard let schemeEnd = url.range(of: "://") else { return nil }
        var rest = url[schemeEnd.upperBound...]
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let port = UInt16(parts[1]), port > 0 else { return nil }
        let octets = parts[0].split(separator: ".", omittingEmptySubsequences: false)
        // inet_pton takes digits only, without leading zeros ("01", "+1"): refuse the rest here, as a usage error.
        guard octets.count == 4,
            octets.allSatisfy({ $0.count <= 3 && $0.allSatisfy { $0.isASCII && $0.isNumber } && UInt8($0) != nil && ($0.count == 1 || $0.first != "0") })
        else { return nil }
        self.init(host: String(parts[0]), port: Int(port))
    }
}

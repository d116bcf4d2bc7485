import CLoadGenerator
import LoadGenerator
import Runtime

/// `engage bench ingest`: HTTP load on a running server's POST /v1/events, for
/// Benchmarks/ingest.sh. The load runs on one epoll thread in C, so that on a machine shared with
/// the server it takes a small part of the CPU (wrk with a Lua body generator took about a third
/// of what the server did per single-event request). Prints one `ingest.result key=value ...`
/// line (latencies in microseconds), and `ingest.problem ...` for the first non-200 answer.
enum IngestLoadBenchmark {
    static let options: [Command.Option] = [
        .init("url", value: "url", help: "The server, http://IPv4:port.", default: "http://127.0.0.1:8080"),
        .init("key", value: "key", help: "Ingest key; better given by the environment, off the command line.", environment: "ENGAGE_BENCH_KEY"),
        .init("connections", value: "n", help: "Keep-alive connections.", default: "16"),
        .init("batch", value: "n", help: "Events per request (1-1000).", default: "100"),
        .init("seconds", value: "s", help: "How long requests are sent; those in flight then are awaited.", default: "10"),
        .init("rate", value: "n", help: "Requests per second over all connections; 0 sends as fast as answers come.", default: "0"),
        .init("tag", value: "n", help: "0-4095, part of every event id: distinguishes a run's phases.", default: "0"),
        .init("stream", value: "n", help: "0-4095, part of every event id: distinguishes generators running side by side.", default: "0"),
        .init("ids", value: "kind", help: "time (time-ordered, as EngageClient makes them) or random.", default: "time"),
        .init("timeout", value: "s", help: "Seconds a request may wait for its answer.", default: "10"),
    ]

    enum IDKind: String, CaseIterable {
        case time, random
    }

    static func run(_ arguments: ParsedArguments) async throws {
        let usage = arguments.command.usage(path: arguments.commandPath)
        let (host, port) = try endpoint(arguments.required("url"), usage: usage)
        let key = try arguments.required("key")
        let seconds = try arguments.value("seconds", default: 10.0)
        let rate = try arguments.value("rate", default: 0.0)
        let timeout = try arguments.value("timeout", default: 10.0)
        guard seconds > 0, seconds <= 3600 else {
            throw UsageError(code: .invalidValue, message: "invalid value '\(seconds)' for option '--seconds': expected 0 < s <= 3600", usage: usage)
        }
        guard rate == 0 || (0.01...10_000_000).contains(rate) else {
            throw UsageError(code: .invalidValue, message: "invalid value '\(rate)' for option '--rate': expected 0 (unpaced) or 0.01 to 10000000 requests/s", usage: usage)
        }
        guard timeout > 0, timeout <= 600 else {
            throw UsageError(code: .invalidValue, message: "invalid value '\(timeout)' for option '--timeout': expected 0 < s <= 600", usage: usage)
        }
        guard !key.isEmpty, key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), key.utf8.count <= 200 else {
            throw UsageError(code: .invalidValue, message: "invalid value for option '--key': expected a key as printed by engage keys create", usage: usage)
        }
        var load = IngestLoad(port: port, key: key)
        load.host = host
        load.connections = UInt32(try arguments.int("connections", default: 16, in: 1...10_000))
        load.batch = UInt32(try arguments.int("batch", default: 100, in: 1...1_000))
        load.seconds = seconds
        load.rate = rate
        load.tag = UInt32(try arguments.int("tag", default: 0, in: 0...4095))
        load.stream = UInt32(try arguments.int("stream", default: 0, in: 0...4095))
        load.randomIDs = try arguments.value("ids", default: IDKind.time) == .random
        load.timeoutSeconds = timeout
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

    /// `http://a.b.c.d:port` (a trailing slash allowed) as a numeric IPv4 host and a port.
    static func endpoint(_ url: String, usage: String) throws(UsageError) -> (String, UInt16) {
        var rest = Substring(url)
        let invalid = UsageError(code: .invalidValue, message: "invalid value '\(url)' for option '--url': expected http://IPv4:port", usage: usage)
        guard rest.hasPrefix("http://") else { throw invalid }
        rest = rest.dropFirst("http://".count)
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let port = UInt16(parts[1]), port > 0 else { throw invalid }
        let octets = parts[0].split(separator: ".", omittingEmptySubsequences: false)
        // inet_pton takes no leading zeros ("01"): refuse them here, as a usage error.
        guard octets.count == 4,
            octets.allSatisfy({ $0.count <= 3 && UInt8($0) != nil && ($0.count == 1 || $0.first != "0") })
        else { throw invalid }
        return (String(parts[0]), port)
    }
}

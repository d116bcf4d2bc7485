import CLoadGenerator
import Foundation
import HTTPServer
import LoadGenerator
import Testing
import TestSupport

/// The load behind `engage bench ingest` and Benchmarks/ingest.sh: what it reports must be what
/// the server stored, or the benchmark's figures mean nothing.
@Suite("Load generator of engage bench ingest", .serialized, .timeLimit(.minutes(1)))
struct LoadGeneratorTests {
    struct Load: Sendable {
        var connections: UInt32 = 4
        var batch: UInt32 = 7
        var seconds = 0.5
        var rate = 0.0
        var randomIDs = false
    }

    static func run(_ load: Load, port: Int, key: String, caFile: String? = nil, latencyFile: String? = nil) async throws
        -> CLoadGenerator_Result
    {
        var run = IngestLoad(port: UInt16(port), key: key)
        run.caFile = caFile
        run.latencyFile = latencyFile
        run.connections = load.connections
        run.batch = load.batch
        run.seconds = load.seconds
        run.rate = load.rate
        run.tag = 5
        run.randomIDs = load.randomIDs
        return try await run.run()
    }

    static func problem(_ result: CLoadGenerator_Result) -> String {
        result.firstProblem
    }

    @Test func whatItCountsAsAcceptedIsWhatTheServerStored() async throws {
        let server = try TestServer()
        let key = try await server.key(app: "bench")
        let result = try await Self.run(Load(), port: server.port, key: key)
        #expect(result.requests > 0)
        #expect(result.non200 == 0 && result.read_errors == 0 && result.write_errors == 0 && result.timeouts == 0)
        #expect(result.accepted == result.requests * 7)
        #expect(result.duplicates == 0)
        #expect(try await server.count("SELECT count(*) FROM events WHERE app_id = 'bench'") == Int(result.accepted))
        // Time-ordered ids (version 7), and each event is a valid `delivered` event.
        #expect(try await server.count("SELECT count(*) FROM events WHERE substr(event_id::text, 15, 1) = '7' AND type = 'delivered'")
            == Int(result.accepted))
        #expect(result.p50_us <= result.p90_us && result.p90_us <= result.p99_us && result.p99_us <= result.max_us)
        #expect(result.duration_us > 0)
        await server.stop()
    }

    /// The lines of a latency file: sent (µs since the Unix epoch), latency (µs), status.
    static func latencyLines(_ path: String) throws -> [(sent: Int64, latency: UInt64, status: Int)] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { line in
            let fields = line.split(separator: " ")
            #expect(fields.count == 3, "\(line)")
            return (Int64(fields[0]) ?? -1, UInt64(fields[1]) ?? .max, Int(fields[2]) ?? -1)
        }
    }

    static func temporaryPath(_ name: String) -> String {
        NSTemporaryDirectory() + "engage-\(name)-\(getpid())-\(UUID().uuidString.prefix(8)).txt"
    }

    /// Benchmarks/prune.sh merges these files across back-to-back runs into one p99 over a span:
    /// the file must hold every request the result counts, each at the wall-clock time it was
    /// sent, with the latency the percentiles were taken from.
    @Test func theLatencyFileHoldsEveryRequestAtItsTime() async throws {
        let server = try TestServer()
        let key = try await server.key(app: "bench")
        let path = Self.temporaryPath("latencies")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let before = Int64(Date().timeIntervalSince1970 * 1e6)
        let result = try await Self.run(Load(connections: 3, batch: 5, seconds: 0.5, rate: 200), port: server.port, key: key,
                                        latencyFile: path)
        let after = Int64(Date().timeIntervalSince1970 * 1e6)
        let lines = try Self.latencyLines(path)
        // At least one request a connection (a busy machine makes them slow: 8 of the 100 asked
        // in one loaded run); every one of them is in the file.
        #expect(result.requests >= 3)
        #expect(lines.count == Int(result.requests))
        #expect(lines.allSatisfy { $0.status == 200 })
        // Each sent within the run and answered before it ended.
        #expect(lines.allSatisfy { $0.sent >= before && $0.sent + Int64($0.latency) <= after })
        #expect(lines.map(\.latency).max() == result.max_us)
        // The result's p99 is the lower edge of the 0.2%-wide histogram bucket of the exact
        // nearest-rank p99 of the file's latencies.
        let sorted = lines.map(\.latency).sorted()
        let exact = sorted[(sorted.count * 99 + 99) / 100 - 1]
        #expect(result.p99_us <= exact && exact - result.p99_us <= exact / 512 + 1, "p99 \(result.p99_us) against \(exact)")
        let mean = Double(sorted.reduce(0, +)) / Double(sorted.count)
        #expect(abs(mean - result.mean_us) < 0.01)
        await server.stop()
    }

    @Test func aLatencyFileThatCannotBeWrittenStopsTheRunBeforeAnyRequest() async throws {
        let server = try TestServer()
        let key = try await server.key(app: "bench")
        let path = NSTemporaryDirectory() + "engage-no-such-directory-\(UUID().uuidString)/latencies.txt"
        await #expect(throws: IngestLoad.Failure.self) {
            _ = try await Self.run(Load(connections: 1, batch: 1, seconds: 0.2), port: server.port, key: key, latencyFile: path)
        }
        #expect(try await server.count("SELECT count(*) FROM events") == 0)
        await server.stop()
    }

    @Test func randomIDsAreVersionFourAndAllStored() async throws {
        let server = try TestServer()
        let key = try await server.key(app: "bench")
        let result = try await Self.run(Load(connections: 2, batch: 20, seconds: 0.3, randomIDs: true), port: server.port, key: key)
        #expect(result.accepted > 0 && result.accepted == result.requests * 20)
        #expect(try await server.count("SELECT count(*) FROM events WHERE substr(event_id::text, 15, 1) = '4'") == Int(result.accepted))
        await server.stop()
    }

    @Test func refusedRequestsAreCountedWithTheFirstProblem() async throws {
        let server = try TestServer()
        let path = Self.temporaryPath("refused")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try await Self.run(Load(connections: 2, batch: 1, seconds: 0.2), port: server.port,
                                        key: "egk_00000000_not-a-real-secret", latencyFile: path)
        #expect(result.requests > 0)
        // Each refused request is in the latency file with its status.
        let lines = try Self.latencyLines(path)
        #expect(lines.count == Int(result.requests) && lines.allSatisfy { $0.status == 401 })
        #expect(result.non200 == result.requests)
        #expect(result.accepted == 0)
        #expect(Self.problem(result).hasPrefix("401 "))
        #expect(try await server.count("SELECT count(*) FROM events") == 0)
        await server.stop()
    }

    @Test func aPacedLoadNeverExceedsItsRate() async throws {
        let server = try TestServer()
        let key = try await server.key(app: "bench")
        // 100 requests/s for one second over 8 connections: slots are 10 ms apart from the start,
        // so at most 101 can be sent however fast the server answers.
        let result = try await Self.run(Load(connections: 8, batch: 1, seconds: 1, rate: 100), port: server.port, key: key)
        #expect(result.requests <= 101)
        #expect(result.requests >= 10) // it does send: the upper bound is the point
        #expect(result.non200 == 0)
        await server.stop()
    }

    @Test func overHTTPSItCountsWhatTheServerStored() async throws {
        let authority = try TestCertificateAuthority()
        let stranger = try TestCertificateAuthority(name: "another CA")
        defer { authority.remove(); stranger.remove() }
        let leaf = try authority.issue("server")
        let credentials = try TLSCredentials(certificateFile: leaf.certificateFile, keyFile: leaf.keyFile)
        let server = try TestServer { $0.http.tls = credentials }
        let key = try await server.key(app: "bench")
        let result = try await Self.run(Load(connections: 3, batch: 5, seconds: 0.5), port: server.port, key: key,
                                        caFile: authority.certificateFile)
        #expect(result.requests > 0)
        #expect(result.connect_errors == 0 && result.non200 == 0 && result.read_errors == 0 && result.write_errors == 0 && result.timeouts == 0)
        #expect(result.accepted == result.requests * 5)
        #expect(try await server.count("SELECT count(*) FROM events WHERE app_id = 'bench'") == Int(result.accepted))

        // A server whose certificate the given CA did not sign: every handshake fails, nothing is sent.
        let refused = try await Self.run(Load(connections: 1, batch: 1, seconds: 0.3), port: server.port, key: key,
                                         caFile: stranger.certificateFile)
        #expect(refused.requests == 0)
        #expect(refused.connect_errors > 0)
        #expect(Self.problem(refused).hasPrefix("TLS handshake failed: "), "\(Self.problem(refused))")
        await server.stop()
    }

    @Test func nothingListeningIsAnErrorNotAHang() async throws {
        // A port nobody listens on: connects are refused until the generator gives up.
        let result = try await Self.run(Load(connections: 1, batch: 1, seconds: 0.3), port: 1, key: "egk_x")
        #expect(result.requests == 0)
        #expect(result.connect_errors > 0)
    }
}

import CLoadGenerator
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

    static func run(_ load: Load, port: Int, key: String, caFile: String? = nil) async throws -> CLoadGenerator_Result {
        var run = IngestLoad(port: UInt16(port), key: key)
        run.caFile = caFile
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
        let result = try await Self.run(Load(connections: 2, batch: 1, seconds: 0.2), port: server.port,
                                        key: "egk_00000000_not-a-real-secret")
        #expect(result.requests > 0)
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

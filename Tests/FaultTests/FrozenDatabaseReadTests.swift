import EngageAPI
import Foundation
import Postgres
import Runtime
import Testing
import TestSupport

/// Routes that read the database (a device's assignments, a report, the experiment list) while
/// PostgreSQL answers nothing at all (every process stopped with SIGSTOP: a machine frozen, a
/// network that drops everything): each request is answered 503 with `Retry-After` within its
/// bound instead of waiting until PostgreSQL answers again, and the pooled connections those
/// requests held are given back, so the server answers as soon as PostgreSQL does.
///
/// The server runs in process, with keys cached for the whole test: a key looked up while frozen
/// is bounded already (`ShutdownTests`), but one cached before it (5 s by default) lets requests
/// reach the read itself. A cluster of its own: the test freezes it.
@Suite("Faults: reads while PostgreSQL does not answer")
struct FrozenDatabaseReadTests {
    @Test(.timeLimit(.minutes(3)))
    func readsAreAnswered503WithinTheirBoundAndResume() async throws {
        try await ShutdownRun.withMigratedCluster(workspace: "frozen-reads", database: "frozen") { run, _ in
            // Fewer connections than the requests sent while frozen: a request must not wait for
            // a connection another stuck request holds, either.
            let engage = try EngageServer(configuration: .requestsOnly(poolSize: 2), database: run.database,
                                          logger: Logger(label: "frozen", level: .warning, sink: MemoryLogSink()))
            let serving = Task { try await engage.run() }
            defer { serving.cancel() }
            let ingestKey = try await engage.keys.create(app: "frozen", role: .ingest).secret
            let readKey = try await engage.keys.create(app: "frozen", role: .read).secret
            let port = engage.port
            let reads: [(path: String, key: String)] = [
                ("/v1/assignments?device_id=device-1", ingestKey), ("/v1/assignments?device_id=device-2", ingestKey),
                ("/v1/report", readKey), ("/v1/experiments", readKey),
            ]
            // Answered while PostgreSQL answers, which also caches both keys.
            try await run.waitFor("the server to answer every read") {
                try await Self.statuses(reads, port: port).map(\.status) == [200, 200, 200, 200]
            }

            try await run.freezeServer()
            let started = ContinuousClock.now
            let answers = try await Self.statuses(reads, port: port, receiveTimeout: 40)
            let took = ContinuousClock.now - started
            for (read, answer) in zip(reads, answers) {
                #expect(answer.status == 503 && answer.retryAfter == "5", "\(read.path): \(answer.status) \(answer.text)")
            }
            #expect(took < .seconds(20), "the reads took \(took) to be answered while PostgreSQL did not answer")

            // A process of the tree that ran on would void the test.
            let running = try run.serverProcesses().filter { !ProcessTreeFreeze.cannotRun($0) }
            #expect(running.isEmpty, "PostgreSQL processes ran while the test took PostgreSQL for frozen: \(running.map(LocalSystem.describe))")
            try run.continueServer()
            try await run.waitFor("the server to answer every read again") {
                try await Self.statuses(reads, port: port).map(\.status) == [200, 200, 200, 200]
            }
            serving.cancel()
            _ = try? await serving.value
            await engage.closePools()
        }
    }

    struct Answer: Sendable {
        var status: Int
        var retryAfter: String?
        var text: String
    }

    /// Sends every read at once, each on a connection of its own; the answers in the same order.
    /// A read not answered within `receiveTimeout` seconds has status 0.
    static func statuses(_ reads: [(path: String, key: String)], port: Int, receiveTimeout: Int = 10) async throws -> [Answer] {
        try await withThrowingTaskGroup(of: (Int, Answer).self) { group in
            for (index, read) in reads.enumerated() {
                let (path, key) = read
                group.addTask {
                    do {
                        let response = try await offPool {
                            try RawHTTPClient(port: port, receiveTimeout: receiveTimeout).request(
                                "GET", path, headers: [("Authorization", "Bearer \(key)")])
                        }
                        return (index, Answer(status: response.status, retryAfter: response.headers["Retry-After"], text: response.text))
                    } catch {
                        return (index, Answer(status: 0, retryAfter: nil, text: "no answer within \(receiveTimeout) s (\(error))"))
                    }
                }
            }
            var answers = [Answer?](repeating: nil, count: reads.count)
            for try await (index, answer) in group { answers[index] = answer }
            return answers.map { $0! }
        }
    }
}

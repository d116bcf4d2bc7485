import Foundation
import Postgres
import Synchronization
import Testing
import TestSupport

/// Sustained ingestion from several clients, each on a thread of its own: a client sends a batch
/// of fresh events and resends it, with the same ids, until a 200 acknowledges it (as
/// EngageClient does), then moves on. Every answer is recorded, so a test can check the log
/// against exactly what the clients were told.
final class IngestLoad: Sendable {
    struct Ledger: Sendable {
        /// Ids some 200 answer covered.
        var acknowledged: Set<String> = []
        /// Ids sent at least once.
        var sent: Set<String> = []
        var requests = 0
        /// Answers other than 200, by status.
        var refusals: [Int: Int] = [:]
        /// Requests that got no answer (connection refused or reset: a server killed or restarting).
        var connectionFailures = 0
        /// Events a retry found already stored: the first attempt committed but its answer was lost.
        var duplicatesReported = 0
        /// Answers outside the contract (a 500, a 503 without Retry-After, a rejected event...).
        var unexpected: [String] = []
        /// Ids never acknowledged before the load gave up.
        var abandoned: [String] = []
        /// Requests written whole and not yet answered (nor failed).
        var inFlight = 0
        /// What became of the requests sent after `mark()`.
        var sinceMark = SinceMark()
    }

    struct SinceMark: Sendable {
        var sent = 0
        var inFlight = 0
        var acknowledged = 0
        var refused = 0
    }

    let key: String
    /// Notifications per batch (each makes two to four events).
    let notificationsPerBatch: Int
    private let ports: Mutex<[Int]>
    private let ledger = Mutex(Ledger())
    private let stopping = Mutex(false)
    private let halting = Mutex(false)
    private let marked = Mutex(false)
    private let giveUpAt: ContinuousClock.Instant
    /// How long a client waits for an answer before it counts the request as without one: longer
    /// than the server's `--commit-timeout`, after which a stuck commit is answered.
    private let receiveTimeoutSeconds: Int

    init(key: String, ports: [Int], notificationsPerBatch: Int = 8, giveUpAfter: Duration = .seconds(100),
         receiveTimeoutSeconds: Int = 20) {
        self.key = key
        self.notificationsPerBatch = notificationsPerBatch
        self.ports = Mutex(ports)
        giveUpAt = ContinuousClock.now.advanced(by: giveUpAfter)
        self.receiveTimeoutSeconds = receiveTimeoutSeconds
    }

    var snapshot: Ledger { ledger.withLock { $0 } }

    /// Where the clients send from now on (a restarted server may listen elsewhere).
    func send(to ports: [Int]) { self.ports.withLock { $0 = ports } }

    /// Runs `clients` until `stop()`; each then finishes (acknowledges) the batch it holds.
    func run(clients: Int) async {
        await withTaskGroup(of: Void.self) { group in
            for client in 0..<clients {
                group.addTask { _ = try? await offPool { self.sendBatches(client: client) } }
            }
        }
    }

    func stop() { stopping.withLock { $0 = true } }

    /// Stops at once: each client waits for the answer to the request it has in flight, then
    /// sends nothing more, leaving its batch unacknowledged (as a client whose server went away).
    func halt() { halting.withLock { $0 = true } }

    /// From now on, requests are also counted in `Ledger.sinceMark`.
    func mark() { marked.withLock { $0 = true } }

    /// Waits until `count` more ids than now are acknowledged.
    func waitForAcknowledgements(_ count: Int, timeout: Duration = .seconds(60)) async throws {
        let target = snapshot.acknowledged.count + count
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while snapshot.acknowledged.count < target {
            guard ContinuousClock.now < deadline else {
                throw FaultTestError("the load got fewer than \(count) acknowledgements within \(timeout): \(summary)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    var summary: String {
        let ledger = snapshot
        return "\(ledger.requests) requests, \(ledger.acknowledged.count) events acknowledged, refusals \(ledger.refusals), "
            + "\(ledger.connectionFailures) without answer, \(ledger.duplicatesReported) duplicates reported"
    }

    /// The log holds every acknowledged id exactly once, and nothing of this app that was never
    /// sent; after `halt()`, when the last batches stay unacknowledged. No answer broke the contract.
    func expectAcknowledgedStoredOnce(_ pool: ConnectionPool, app: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        _ = try await expectAcknowledgedStoredOnce(snapshot, pool, app: app, sourceLocation: sourceLocation)
    }

    /// The log holds every acknowledged id exactly once and nothing else of this app; every id
    /// sent was acknowledged in the end; no answer broke the contract.
    /// Returns whether every expectation held.
    @discardableResult
    func expectLogMatches(_ pool: ConnectionPool, app: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Bool {
        let ledger = snapshot
        let allAnswered = ledger.abandoned.isEmpty && ledger.sent == ledger.acknowledged
        #expect(ledger.abandoned.isEmpty, "\(ledger.abandoned.count) events never acknowledged", sourceLocation: sourceLocation)
        #expect(ledger.sent == ledger.acknowledged, sourceLocation: sourceLocation)
        return try await expectAcknowledgedStoredOnce(ledger, pool, app: app, sourceLocation: sourceLocation) && allAnswered
    }

    private func expectAcknowledgedStoredOnce(_ ledger: Ledger, _ pool: ConnectionPool, app: String, sourceLocation: SourceLocation) async throws
        -> Bool {
        let stored = try await pool.withConnection { connection in
            try connection.query("SELECT event_id::text FROM events WHERE app_id = \(app)").rows.map { try $0.decode(0, as: String.self) }
        }
        let storedSet = Set(stored)
        #expect(ledger.unexpected.isEmpty, "answers outside the contract: \(ledger.unexpected.prefix(5))", sourceLocation: sourceLocation)
        #expect(stored.count == storedSet.count, "\(stored.count - storedSet.count) duplicate rows", sourceLocation: sourceLocation)
        let lost = ledger.acknowledged.subtracting(storedSet)
        #expect(lost.isEmpty, "\(lost.count) acknowledged events are not in the log, e.g. \(lost.prefix(3))", sourceLocation: sourceLocation)
        let extra = storedSet.subtracting(ledger.sent)
        #expect(extra.isEmpty, "\(extra.count) stored events were never sent", sourceLocation: sourceLocation)
        return ledger.unexpected.isEmpty && stored.count == storedSet.count && lost.isEmpty && extra.isEmpty
    }

    // MARK: Clients

    private var isStopping: Bool { stopping.withLock { $0 } }
    private var isHalted: Bool { halting.withLock { $0 } }

    private func sendBatches(client: Int) {
        var round = 0
        while !isStopping && !isHalted {
            let batch = FunnelEvents.notifications(notificationsPerBatch, label: "c\(client)-\(round)")
            round += 1
            ledger.withLock { $0.sent.formUnion(batch.ids) }
            // A client that gave up sends nothing more (a failed test still ends).
            guard deliver(batch, client: client) else { return }
        }
    }

    /// Sends until acknowledged, alternating between the servers, backing off a little; false
    /// when halted or given up before an acknowledgement.
    private func deliver(_ batch: [WireEvent], client: Int) -> Bool {
        let body = Array(batch.body.utf8)
        let headers = [("Authorization", "Bearer \(key)"), ("Content-Type", "application/json")]
        var attempt = 0
        while ContinuousClock.now < giveUpAt && !isHalted {
            let ports = self.ports.withLock { $0 }
            let port = ports[(client + attempt) % ports.count]
            attempt += 1
            let sinceMark = marked.withLock { $0 }
            var sent = false
            do {
                let connection = try RawHTTPClient(port: port, receiveTimeout: receiveTimeoutSeconds)
                try connection.sendRequest("POST", "/v1/events", headers: headers, body: body)
                // In flight once written whole, not before: a test waiting until every client has a
                // request in flight must not go on while one (starved on a busy machine) still connects.
                sent = true
                ledger.withLock { ledger in
                    ledger.requests += 1
                    ledger.inFlight += 1
                    if sinceMark {
                        ledger.sinceMark.sent += 1
                        ledger.sinceMark.inFlight += 1
                    }
                }
                let response = try connection.readResponse()
                ledger.withLock { ledger in
                    ledger.inFlight -= 1
                    guard sinceMark else { return }
                    ledger.sinceMark.inFlight -= 1
                    if response.status == 200 { ledger.sinceMark.acknowledged += 1 } else { ledger.sinceMark.refused += 1 }
                }
                if record(response, batch) { return true }
            } catch {
                ledger.withLock { ledger in
                    ledger.connectionFailures += 1
                    guard sent else { return }
                    ledger.inFlight -= 1
                    if sinceMark { ledger.sinceMark.inFlight -= 1 }
                }
            }
            Thread.sleep(forTimeInterval: 0.01 * Double(min(attempt, 10)))
        }
        if !isHalted { ledger.withLock { $0.abandoned += batch.ids } }
        return false
    }

    /// Records one answer; true when it acknowledged the batch.
    private func record(_ response: RawHTTPClient.Response, _ batch: [WireEvent]) -> Bool {
        guard response.status == 200 else {
            let retryable = response.status == 503 || response.status == 429
            let wellFormed = response.headers["Retry-After"].flatMap { Int($0) } != nil
                && response.headers["Content-Type"] == "application/problem+json"
            ledger.withLock { ledger in
                ledger.refusals[response.status, default: 0] += 1
                if !(retryable && wellFormed) { ledger.unexpected.append("\(response.status) \(response.headers["Retry-After"] ?? "-"): \(response.text)") }
            }
            return false
        }
        let answer = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        let accepted = (answer?["accepted"] as? NSNumber)?.intValue ?? -1
        let duplicates = (answer?["duplicates"] as? NSNumber)?.intValue ?? -1
        let rejected = (answer?["rejected"] as? [Any])?.count ?? -1
        ledger.withLock { ledger in
            if accepted + duplicates != batch.count || rejected != 0 || accepted < 0 || duplicates < 0 {
                ledger.unexpected.append("200 for \(batch.count) events: \(response.text)")
            }
            ledger.acknowledged.formUnion(batch.ids)
            ledger.duplicatesReported += max(0, duplicates)
        }
        return true
    }
}

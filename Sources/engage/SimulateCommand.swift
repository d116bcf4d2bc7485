import EngageCore
import EventStore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Postgres
import Runtime

/// `engage simulate`: seeded traffic with known ground truth, sent through the HTTP API or
/// appended straight to the log.
enum SimulateCommand {
    static let url = Option("url", value: "url", help: "engage's address for sending through the API.", environment: "ENGAGE_URL",
                            default: "http://127.0.0.1:8080")
    static let key = Option<String?>("key", value: "key", help: "An ingest key (for the API).", environment: "ENGAGE_KEY", secret: true)
    static let app = Option("app", value: "id", help: "The app for --direct appends.", default: "demo", validate: CommonOptions.appID)
    static let notifications = Option("notifications", value: "n", help: "Notifications to simulate.", default: 10_000, validate: .range(1...10_000_000))
    static let devices = Option("devices", value: "n", help: "Devices they go to.", default: 1_000, validate: .range(1...10_000_000))
    static let seed = Option("seed", value: "n", help: "Random seed; the same seed gives the same traffic, event ids included (another app's traffic needs another seed).", default: 1,
                              validate: .range(0...maxSeed))
    /// Seeds below 2^62, so that the pre-period's (the seed with bit 62 set) is no other run's.
    static let maxSeed = (1 << 62) - 1
    static let batch = Option("batch", value: "events", help: "Events per request.", default: 200, validate: .range(1...1000))
    static let duplicates = Option("duplicates", value: "fraction", help: "Share of events sent twice (retries).", default: 0.02, validate: .fraction)
    static let outOfOrder = Option("out-of-order", value: "fraction", help: "Share of notifications whose events arrive shuffled.", default: 0.1,
                                   validate: .fraction)
    static let maxSeconds = Option("max-seconds", value: "s", help: "Stop after this long.", default: 120, validate: .range(1...86_400))
    static let direct = Flag("direct", help: "Append straight to the event log instead of using the API.")
    static let prePeriod = Flag("pre-period", help: "The same devices' traffic before the experiment: untagged, other notification ids, ending before the experiment's simulated day starts.")
    static let spread = Option("spread", value: "x", help: "Standard deviation of the devices' log-odds propensity, kept before and during the experiment.",
                               default: 0.0, validate: .spread)

    static let definition = Command(
        name: "simulate",
        abstract: "Generate seeded notification traffic with known rates and send it to engage.",
        options: CommonOptions.databaseAndLogging + [url, key, app, notifications, devices, seed, batch, duplicates, outOfOrder, maxSeconds,
                                                      spread],
        flags: [direct, prePeriod],
        run: run)

    static func isHTTPAddress(_ text: String) -> Bool {
        guard let url = URL(string: text + "/v1/events"), let scheme = url.scheme?.lowercased() else { return false }
        return (scheme == "http" || scheme == "https") && !(url.host ?? "").isEmpty
    }

    static func run(_ arguments: ParsedArguments) async throws {
        let logger = CommonOptions.quietLogger(arguments)
        var scenario = SimulationScenario.standard
        scenario.notificationCount = arguments[notifications]
        scenario.deviceCount = arguments[devices]
        scenario.propensity = DevicePropensity(spread: arguments[spread])
        // The simulated day ends now, so every event is inside the accepted window.
        let day = (scenario.spanSeconds + SimulationScenario.maximumTailSeconds) * 1_000_000 + 60_000_000
        var start = SystemTime().wallClock.adding(microseconds: -day)
        var seed = UInt64(arguments[seed])
        var propensitySeed: UInt64?
        if arguments[prePeriod] {
            // The day before, for the same people (their propensities), with ids of their own.
            scenario.experiment = nil
            start = start.adding(microseconds: -day)
            propensitySeed = seed
            seed |= 1 << 62
        }
        let simulator: TrafficSimulator
        do {
            simulator = try TrafficSimulator(scenario: scenario, seed: seed, start: start,
                                             options: SimulationOptions(outOfOrderFraction: arguments[outOfOrder], duplicateFraction: arguments[duplicates],
                                                                        propensitySeed: propensitySeed))
        } catch {
            throw arguments.usageError(.invalidValue, "\(error)")
        }
        let target: SimulationTarget
        if arguments[direct] {
            let setup = try DatabaseSetup.open(arguments, logger: logger)
            target = .direct(EventStore(pool: ConnectionPool(configuration: setup.configuration, size: 2)), app: arguments[app], setup: setup)
        } else {
            guard let key = arguments[Self.key] else {
                throw arguments.usageError(.missingValue, "missing \(Self.key.longName) (an ingest key) to send through the API; or use \(direct.longName)")
            }
            // Checked here, not with the option, as the URL below (an empty one was sent and refused 401).
            guard CommonOptions.isIngestKey(key) else {
                throw arguments.usageError(.invalidValue, "invalid value for option '\(Self.key.longName)': \(CommonOptions.ingestKey.requirement)")
            }
            // Checked here, not with the option: --direct never uses it, whatever ENGAGE_URL says.
            guard Self.isHTTPAddress(arguments[url]) else {
                throw arguments.usageError(.invalidValue, "invalid value '\(arguments[url])' for option '\(url.longName)': "
                    + "expected an http:// or https:// address such as http://127.0.0.1:8080")
            }
            guard !(URL(string: arguments[url])?.host ?? "").contains(":") else {
                throw arguments.usageError(.invalidValue, "invalid value '\(arguments[url])' for option '\(url.longName)': "
                    + EventSender.ipv6LiteralProblem(sending: "the traffic") + "; use a name instead (http://localhost:8080 reaches [::1]:8080)")
            }
            target = .api(EventSender(base: arguments[url], key: key))
        }
        let progress = ProgressLine.standardError("simulate")
        let summary = try await SimulationRun(simulator: simulator, batchSize: arguments[batch], deadline: .seconds(arguments[maxSeconds]))
            .send(to: target, progress: progress)
        progress.finish()
        print(summary.description)
    }
}

extension Validation where Value == Double {
    /// A share: from 0 to 1.
    static var fraction: Validation {
        Validation("expected a fraction from 0 to 1") { (0...1).contains($0) }
    }

    /// The standard deviation of the devices' log-odds propensity: a number from 0 to 10 (NaN or
    /// infinity would reach the simulations' force unwraps as missing intervals).
    static var spread: Validation {
        Validation("expected a number from 0 to 10") { (0...10).contains($0) }
    }
}

extension Option where Value == Double {
    /// `--spread` of the simulations that draw devices: the standard deviation of their log-odds
    /// propensity, from 0 to 10.
    static func propensitySpread(default value: Double) -> Option {
        Option("spread", value: "x", help: "Standard deviation of the devices' log-odds propensity.", default: value, validate: .spread)
    }
}

/// Where simulated events go.
enum SimulationTarget {
    case api(EventSender)
    case direct(EventStore, app: String, setup: DatabaseSetup)
}

/// Sends a simulator's batches, a few requests at a time, within a deadline.
struct SimulationRun {
    var simulator: TrafficSimulator
    let batchSize: Int
    let deadline: Duration

    struct Summary: CustomStringConvertible {
        var notifications = 0
        var sent = 0
        var accepted = 0
        var duplicates = 0
        var rejected = 0
        var seconds = 0.0
        var stoppedEarly = false
        /// The deadline it stopped at, named as the command's own (`engage demo` has no `--max-seconds`).
        var deadline = Duration.zero

        var description: String {
            let stopped = " (stopped at the deadline, \(deadline.components.seconds) s: the rest of the day was not sent)"
            return String(format: "simulated %d notifications: %d events sent, %d accepted, %d duplicates, %d rejected in %.1f s%@",
                          notifications, sent, accepted, duplicates, rejected, seconds, stoppedEarly ? stopped : "")
        }
    }

    /// Sends everything (or what the deadline allows); `progress` shows the notifications generated so far.
    func send(to target: SimulationTarget, progress: ProgressLine? = nil) async throws -> Summary {
        var batches = simulator.batches(size: batchSize)
        var summary = Summary()
        summary.deadline = deadline
        let stopwatch = Stopwatch()
        let lanes = 4
        while true {
            var round: [[Event]] = []
            while round.count < lanes, let batch = batches.next() { round.append(batch) }
            if round.isEmpty { break }
            let results = try await withThrowingTaskGroup(of: (Int, Int, Int).self) { group in
                for batch in round {
                    group.addTask {
                        switch target {
                        case .api(let sender): return try await sender.send(batch)
                        case .direct(let store, let app, _):
                            let result = try await store.append(batch.map { AppendItem(appID: app, event: $0) })
                            // Neither stored nor duplicates (ids another app's events hold: the same
                            // seed for a second app) are counted, as the API counts them: rejected.
                            return (result.storedCount, result.duplicateCount, batch.count - result.storedCount - result.duplicateCount)
                        }
                    }
                }
                return try await group.reduce(into: [(Int, Int, Int)]()) { $0.append($1) }
            }
            for (accepted, duplicates, rejected) in results {
                summary.accepted += accepted
                summary.duplicates += duplicates
                summary.rejected += rejected
            }
            summary.sent += round.reduce(0) { $0 + $1.count }
            progress?.update(batches.groundTruth.notifications, of: simulator.scenario.notificationCount, "notifications")
            if stopwatch.elapsed > deadline {
                // Stopped early only when something is left: a last round that ended past the
                // deadline sent the whole day.
                summary.notifications = batches.groundTruth.notifications
                summary.stoppedEarly = batches.next() != nil
                break
            }
        }
        if !summary.stoppedEarly { summary.notifications = batches.groundTruth.notifications }
        summary.seconds = stopwatch.elapsed.seconds
        if case .direct(let store, _, let setup) = target {
            await store.pool.close()
            setup.close()
        }
        return summary
    }
}

/// POSTs batches to `/v1/events`, retrying 429 and 503 after `Retry-After` with the same ids.
struct EventSender: Sendable {
    let base: String
    let key: String

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// FoundationNetworking refuses a URL whose host is an IPv6 literal (`http://[::1]:8080`,
    /// NSURLErrorDomain -1000) before it sends anything.
    static func ipv6LiteralProblem(sending traffic: String) -> String {
        "FoundationNetworking, which sends \(traffic), cannot reach an IPv6 address written as a literal"
    }

    /// The host the traffic can be sent to for a server at `host`: the IPv6 loopback and wildcard
    /// by name, another IPv6 literal not at all (nil).
    static func sendableHost(_ host: String) -> String? {
        switch host {
        case "::1", "::": "localhost"
        case let host where host.contains(":"): nil
        case let host: host
        }
    }

    func send(_ events: [Event]) async throws -> (Int, Int, Int) {
        guard let url = URL(string: base + "/v1/events") else { throw Failure(description: "bad --url \(base)") }
        var body: [UInt8] = [UInt8(ascii: "[")]
        for (index, event) in events.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += event.encodeWireJSON()
        }
        body.append(UInt8(ascii: "]"))
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body)
        for attempt in 0..<8 {
            let (data, response) = try await exchange(request)
            let status = response.statusCode
            if status == 200 {
                let json = try JSON.parse(Array(data))
                let accepted = json.member(json.root, "accepted").flatMap(json.int64) ?? 0
                let duplicates = json.member(json.root, "duplicates").flatMap(json.int64) ?? 0
                let rejected = json.member(json.root, "rejected").map(json.count) ?? 0
                return (Int(accepted), Int(duplicates), rejected)
            }
            if status == 429 || status == 503, attempt < 7 {
                let wait = Int(response.value(forHTTPHeaderField: "Retry-After") ?? "1") ?? 1
                try await Task.sleep(for: .seconds(max(1, min(wait, 10))))
                continue
            }
            throw Failure(description: "POST /v1/events answered \(status): \(String(decoding: data, as: UTF8.self))")
        }
        throw Failure(description: "POST /v1/events kept failing")
    }

    /// One request, answered through URLSession's completion handler: on Linux its async
    /// `data(for:)` traps or never returns when a request fails (a refused connection), where
    /// this says which address could not be reached.
    private func exchange(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await withCheckedThrowingContinuation { continuation in
            URLSession.shared.dataTask(with: request) { data, response, error in
                if let response = response as? HTTPURLResponse {
                    continuation.resume(returning: (data ?? Data(), response))
                } else {
                    continuation.resume(throwing: Failure(
                        description: "could not reach engage at \(base): \(error?.localizedDescription ?? "no answer")"))
                }
            }.resume()
        }
    }
}

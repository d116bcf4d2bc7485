import ClientTestSupport
import EngageClient
import EngageNotificationService
import Foundation

// The client's timings, for BENCHMARKS.md:
//
//   EngageClientBench queue [--sizes 100,1000,10000] [--records 200]
//       the cost of one `record` (append + fsync) with 100, 1,000 and 10,000 events already
//       queued: median and p95 of --records records at each size, taken in turn,
//       and the ratio of each median to the smallest size's (the baseline, in the same run).
//   EngageClientBench handler [--runs 200]
//       a Notification Service Extension session end to end against a loopback media host,
//       with the engage server unreachable: the time from the end of the download (file on
//       disk) to the content handler's return, median and p95.
//
// Build with `swift build -c release --product EngageClientBench`. The queue lives in the
// system's temporary directory, so its file system is the one measured.

let arguments = Array(CommandLine.arguments.dropFirst())

func option(_ name: String, _ fallback: String) -> String {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return fallback }
    return arguments[index + 1]
}

func usage() -> Never {
    FileHandle.standardError.write(Data("usage: EngageClientBench queue [--sizes 100,1000,10000] [--records 200] | handler [--runs 200]\n".utf8))
    exit(64)
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

func temporaryContainer() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("engage-client-bench-\(UUID().uuidString)")
}

func client(_ container: URL, endpoint: URL, batchSize: Int = 50) throws -> EngageClient {
    try EngageClient(configuration: EngageClient.Configuration(
        endpoint: endpoint, ingestKey: "egk_bench", containerDirectory: container, deviceID: "bench-device",
        batchSize: batchSize, maxQueueBytes: 1 << 30))
}

/// Fills the queue with `count` events the way the client leaves them: segments of 50 lines in
/// `ready/`, written directly (recording them one by one would take minutes of fsyncs).
func fill(_ container: URL, count: Int) throws {
    let ready = container.appendingPathComponent("EngageClient/ready")
    try FileManager.default.createDirectory(at: ready, withIntermediateDirectories: true)
    let template = EngageEvent(notificationID: "n", deviceID: "bench-device", category: "new_photo",
                               body: .displayed(presentation: .rich, attachmentKind: .image))
    var segment = 0
    for start in stride(from: 0, to: count, by: 50) {
        segment += 1
        let lines = (start..<min(start + 50, count)).map { number -> String in
            var event = template
            event.eventID = UUID()
            event.notificationID = "n-\(number)"
            return event.json + "\n"
        }.joined()
        let digits = String(segment)
        let name = String(repeating: "0", count: 20 - digits.count) + digits + ".ndjson"
        try Data(lines.utf8).write(to: ready.appendingPathComponent(name))
    }
}

func benchQueue() throws {
    let sizes = option("--sizes", "100,1000,10000").split(separator: ",").compactMap { Int($0) }
    let records = Int(option("--records", "200")) ?? 200
    let containers = sizes.map { _ in temporaryContainer() }
    defer { for container in containers { try? FileManager.default.removeItem(at: container) } }
    var clients: [EngageClient] = []
    for (size, container) in zip(sizes, containers) {
        try fill(container, count: size)
        clients.append(try client(container, endpoint: URL(string: "http://127.0.0.1:9")!))
    }
    let clock = ContinuousClock()
    var samples = Array(repeating: [Double](), count: sizes.count)
    for number in 0..<records {
        // Record by record, each size in turn and the order rotating, so that a slow moment of
        // the machine falls on every size alike.
        for step in 0..<clients.count {
            let index = (number + step) % clients.count
            let start = clock.now
            _ = try clients[index].recordSent(notificationID: "bench-\(number)", category: "new_photo", media: [], deviceID: "bench-device")
            samples[index].append(milliseconds(clock.now - start))
        }
    }
    print("record cost against queued events (\(records) records per size, interleaved; append + fsync each)")
    print("queued_events  median_ms  p95_ms  ratio_to_first")
    let baseline = percentile(samples[0], 0.5)
    for (size, values) in zip(sizes, samples) {
        let median = percentile(values, 0.5)
        print(String(format: "%13d  %9.3f  %6.3f  %14.2f", size, median, percentile(values, 0.95), median / baseline))
    }
}

/// Waits for one session's report.
final class Finish: @unchecked Sendable {
    // Guards `report` and `waiting`.
    private let lock = NSLock()
    private var report: NotificationServiceSession<String>.Report?
    private var waiting: CheckedContinuation<NotificationServiceSession<String>.Report, Never>?

    func done(_ report: NotificationServiceSession<String>.Report) {
        lock.lock()
        let continuation = waiting
        if continuation == nil { self.report = report }
        waiting = nil
        lock.unlock()
        continuation?.resume(returning: report)
    }

    func wait() async -> NotificationServiceSession<String>.Report {
        await withCheckedContinuation { continuation in
            lock.lock()
            if let report {
                lock.unlock()
                continuation.resume(returning: report)
            } else {
                waiting = continuation
                lock.unlock()
            }
        }
    }
}

func benchHandler() async throws {
    let runs = Int(option("--runs", "200")) ?? 200
    let body: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + (0..<200_000).map { UInt8(truncatingIfNeeded: $0) }
    let host = try FaultInjector(reply: .bytes(status: 200, headers: [("Content-Type", "image/jpeg")], body: body, declareLength: true))
    defer { host.stop() }
    let container = temporaryContainer()
    defer { try? FileManager.default.removeItem(at: container) }
    let unreachable = URL(string: "http://127.0.0.1:\(try FaultInjector.closedPort())")!
    let engage = try client(container, endpoint: unreachable)
    let downloads = container.appendingPathComponent("downloads")
    try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
    var samples: [Double] = []
    for run in 0..<runs {
        let payload = PushPayload(notificationID: "bench-\(run)", experiment: ExperimentArm(id: "exp", arm: "thumbnail", probability: 0.5),
                                  strategy: "thumbnail",
                                  media: [PushPayload.Media(variant: "thumbnail", url: host.url.appendingPathComponent("t.jpg"))])
        let finish = Finish()
        let session = NotificationServiceSession<String>(
            client: engage, notificationID: "bench-\(run)", category: "new_photo", payload: payload, policy: ServiceExtensionPolicy(),
            downloadDirectory: downloads, original: "plain", attach: { media, _ in media.file.path }, deliver: { _ in },
            onReport: { finish.done($0) })
        session.start()
        let report = await finish.wait()
        await session.waitForSend()
        guard report.outcome == .attached, let ended = report.downloadFinishedAt else {
            print("run \(run): outcome \(report.outcome.rawValue)")
            continue
        }
        samples.append(milliseconds(report.deliveredAt - ended))
        if let file = try? FileManager.default.contentsOfDirectory(atPath: downloads.path) {
            for name in file { try? FileManager.default.removeItem(at: downloads.appendingPathComponent(name)) }
        }
    }
    print("end of download to content handler, server unreachable (\(samples.count) runs of \(runs))")
    print(String(format: "median_ms %.3f  p95_ms %.3f  max_ms %.3f", percentile(samples, 0.5), percentile(samples, 0.95), samples.max() ?? .nan))
    print("queued events afterwards: \(engage.pending.events) (every delivered event waits for the server)")
}

switch arguments.first {
case "queue": try benchQueue()
case "handler": try await benchHandler()
default: usage()
}

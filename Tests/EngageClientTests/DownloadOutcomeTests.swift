import ClientTestSupport
import Foundation
import Testing
import TestSupport
@testable import EngageNotificationService

/// Holds the download a hook of its own must reach.
private final class DownloadHolder: @unchecked Sendable {
    // Guards `download`: set by the test's task, read on a URLSession thread.
    private let lock = NSLock()
    private var held: MediaDownload?

    var download: MediaDownload? {
        get { lock.withLock { held } }
        set { lock.withLock { held = newValue } }
    }
}

/// Outcomes a download reported, from whichever thread.
private final class OutcomeList: @unchecked Sendable {
    // Guards `outcomes`.
    private let lock = NSLock()
    private var outcomes: [DownloadResult] = []

    func append(_ outcome: DownloadResult) { lock.withLock { outcomes.append(outcome) } }
    var all: [DownloadResult] { lock.withLock { outcomes } }
}

@Suite("Notification Service Extension: a download's outcome")
struct DownloadOutcomeTests {
    /// The deadline fires just after the finished file got its name: the download happened, so
    /// that is the outcome, and its file is the only one in the directory (never a "timeout"
    /// with the file left behind, attached by nobody and deleted by nobody).
    @Test func aDeadlineAfterTheRenameDoesNotHideTheDownload() async throws {
        let body = MediaSamples.jpeg(8000)
        let host = try FaultInjector(reply: .bytes(status: 200, headers: [("Content-Type", "image/jpeg")], body: body, declareLength: true))
        defer { host.stop() }
        try await download(from: host, deadlineFiringAt: .fileRenamed) { result, filesLeft in
            let files = try filesLeft()
            guard case let .downloaded(media) = result else {
                Issue.record("expected the download, got \(result); files left: \(files)")
                return
            }
            #expect(files == [media.file.lastPathComponent])
            let stored = try Data(contentsOf: media.file)
            #expect(Array(stored) == body)
        }
    }

    /// The deadline fires after the response's file was created and before the download took
    /// it: the outcome is the timeout, and that file is removed too. The URLSession thread that
    /// created it removes it once the hook returns, which may be just after the outcome is
    /// delivered: the test waits for the directory to empty (a file never removed meets the
    /// time limit).
    /// The extension's time ran out between choosing the media and starting its download: the
    /// cancelled download sends no request (it would run after the content handler). A second
    /// download to the same host, started afterwards, is the only request the host sees.
    @Test(.timeLimit(.minutes(1))) func aDownloadCancelledBeforeItStartedSendsNothing() async throws {
        let host = try FaultInjector(reply: .bytes(status: 200, headers: [("Content-Type", "image/jpeg")], body: MediaSamples.jpeg(500),
                                                   declareLength: true))
        defer { host.stop() }
        let directory = Container()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        defer { directory.remove() }
        let outcomes = OutcomeList()
        let cancelled = MediaDownload(url: host.url.appendingPathComponent("cancelled.jpg"), variant: "original",
                                      policy: ServiceExtensionPolicy(), directory: directory.url, timeout: .seconds(20)) {
            outcomes.append($0)
        }
        cancelled.cancel()
        cancelled.start()
        let later = await EngageClientTests.download(host.url.appendingPathComponent("later.jpg"), directory: directory.url)
        guard case .downloaded = later else {
            Issue.record("expected the later download, got \(later)")
            return
        }
        #expect(host.hits.map(\.target) == ["/later.jpg"])
        let reported = outcomes.all
        #expect(reported.count == 1)
        if case .cancelled = reported.first {} else { Issue.record("expected only the cancellation, got \(reported)") }
    }

    @Test(.timeLimit(.minutes(1))) func aDeadlineBeforeTheFileIsTakenLeavesNoFile() async throws {
        let host = try FaultInjector(reply: .stall(status: 200, headers: [("Content-Type", "image/jpeg")], body: [],
                                                   declaredLength: 8000))
        defer { host.stop() }
        try await download(from: host, deadlineFiringAt: .fileCreated) { result, filesLeft in
            #expect(result == .timedOut)
            try await pollUntil { try filesLeft().isEmpty }
        }
    }

    /// Downloads from `host` into a directory of its own, firing the deadline when the download
    /// reaches `moment`; `check` gets the outcome and lists the files left, before the directory goes.
    private func download(from host: FaultInjector, deadlineFiringAt moment: MediaDownload.Moment,
                          check: (DownloadResult, _ filesLeft: () throws -> [String]) async throws -> Void) async throws {
        let directory = Container()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        defer { directory.remove() }
        let holder = DownloadHolder()
        let result: DownloadResult = await withCheckedContinuation { continuation in
            let download = MediaDownload(url: host.url.appendingPathComponent("p.jpg"), variant: "original",
                                         policy: ServiceExtensionPolicy(), directory: directory.url, timeout: .seconds(20),
                                         reached: { if $0 == moment { holder.download?.deadlineFired() } }) {
                continuation.resume(returning: $0)
            }
            holder.download = download
            download.start()
        }
        holder.download = nil
        try await check(result) { try FileManager.default.contentsOfDirectory(atPath: directory.url.path) }
    }
}

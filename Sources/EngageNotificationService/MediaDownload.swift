import EngageClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A downloaded file ready to attach.
public struct DownloadedMedia: Sendable, Equatable {
    /// The file, named with the type's extension, in the download directory.
    public var file: URL
    public var type: MediaType
    public var bytes: Int
    public var variant: String
    public var downloadMS: Int
    /// When the last byte was on disk and the file closed.
    public var finishedAt: ContinuousClock.Instant
}

/// What became of one download.
public enum DownloadResult: Sendable, Equatable {
    case downloaded(DownloadedMedia)
    /// Over the kind's limit: declared by `Content-Length` (nothing was downloaded) or reached
    /// while streaming (the download stopped there).
    case tooLarge(bytes: Int, kind: AttachmentKind?)
    /// A type attachments do not accept, or none could be found.
    case unsupportedFormat(String)
    /// The media server answered with a status other than 2xx.
    case httpStatus(Int)
    case failed(String)
    /// The deadline came first.
    case timedOut
    case cancelled
}

/// One streaming download under a deadline: bytes go to a file as they arrive, the size limit
/// of the file's kind is checked against `Content-Length` before any byte is read and then as
/// bytes arrive, and the type is found from the headers, the URL and the first bytes
/// (`MediaTypeDetector`). `completion` runs exactly once, on a URLSession or timer thread.
public final class MediaDownload: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // Every mutable member below is guarded by `lock`; URLSession calls the delegate methods on
    // its own queue and the deadline fires on another.
    private let lock = NSLock()
    private let url: URL
    let variant: String
    private let policy: ServiceExtensionPolicy
    private let directory: URL
    private let timeout: Duration
    private let completion: @Sendable (DownloadResult) -> Void
    /// Moments a download passes where another thread (the deadline's) may cut in.
    enum Moment: Sendable {
        /// The file bytes go to exists, and is not yet the download's.
        case fileCreated
        /// The finished file got its final name; its outcome is not yet delivered.
        case fileRenamed
    }

    /// Called at each `Moment` (tests fire the deadline there).
    private let reached: (@Sendable (Moment) -> Void)?
    private let clock = ContinuousClock()
    private var started: ContinuousClock.Instant?
    private var session: URLSession?
    private var task: URLSessionDataTask?
    private var partial: URL?
    private var output: FileHandle?
    private var received = 0
    private var declared: Int64 = -1
    private var leading: [UInt8] = []
    private var headerGuess = MediaTypeGuess.unknown
    private var type: MediaType?
    private var finished = false

    public convenience init(url: URL, variant: String, policy: ServiceExtensionPolicy, directory: URL, timeout: Duration,
                completion: @escaping @Sendable (DownloadResult) -> Void) {
        self.init(url: url, variant: variant, policy: policy, directory: directory, timeout: timeout, reached: nil,
                  completion: completion)
    }

    init(url: URL, variant: String, policy: ServiceExtensionPolicy, directory: URL, timeout: Duration,
         reached: (@Sendable (Moment) -> Void)?, completion: @escaping @Sendable (DownloadResult) -> Void) {
        self.reached = reached
        self.url = url
        self.variant = variant
        self.policy = policy
        self.directory = directory
        self.timeout = timeout
        self.completion = completion
    }

    /// Starts the download; `completion` follows, at the latest at the deadline.
    public func start() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.httpShouldSetCookies = false
        configuration.timeoutIntervalForResource = max(1, timeout.seconds.rounded(.up) + 1)
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
        let task = session.dataTask(with: URLRequest(url: url))
        // Cancelled before it started (the extension's time ran out first): nothing may run
        // after the content handler, so this request is never sent.
        let cancelledFirst: Bool = lock.withLock {
            guard !finished else { return true }
            self.session = session
            self.task = task
            started = clock.now
            return false
        }
        guard !cancelledFirst else {
            session.invalidateAndCancel()
            return
        }
        guard timeout > .zero else {
            finish(.timedOut)
            return
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout.seconds) { [weak self] in self?.deadlineFired() }
        task.resume()
    }

    public func cancel() {
        finish(.cancelled)
    }

    /// The deadline's timer: whatever has not finished by now has timed out.
    func deadlineFired() {
        finish(.timedOut)
    }

    // MARK: URLSessionDataDelegate

    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                           completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let http = response as? HTTPURLResponse
        if let status = http?.statusCode, !(200...299).contains(status) {
            completionHandler(.cancel)
            finish(.httpStatus(status))
            return
        }
        let disposition = http?.value(forHTTPHeaderField: "Content-Disposition")
        let guess = MediaTypeDetector.detectFromHeaders(mimeType: response.mimeType ?? http?.value(forHTTPHeaderField: "Content-Type"),
                                                        url: response.url ?? url, contentDisposition: disposition)
        // A type the headers name that attachments do not take is no more the last word than one
        // they take: a CDN labels a JPEG image/webp, a JPEG sits at photo.webp. The first bytes
        // decide (`decideType`, after `sniffLength` bytes), and a real WebP stops there.
        let kind: AttachmentKind? = if case let .supported(type) = guess { type.kind } else { nil }
        let declared = response.expectedContentLength
        if declared > 0, declared > Int64(policy.sizeLimit(for: kind)) {
            completionHandler(.cancel)
            finish(.tooLarge(bytes: Int(declared), kind: kind))
            return
        }
        let file = directory.appendingPathComponent(UUID().uuidString + ".download")
        guard FileManager.default.createFile(atPath: file.path, contents: nil), let handle = try? FileHandle(forWritingTo: file) else {
            completionHandler(.cancel)
            finish(.failed("cannot create \(file.lastPathComponent)"))
            return
        }
        reached?(.fileCreated)
        let accepted: Bool = lock.withLock {
            guard !finished else { return false }
            headerGuess = guess
            self.declared = declared
            partial = file
            output = handle
            return true
        }
        if !accepted {
            // Finished meanwhile (the deadline, a cancel): the file was never the download's to remove.
            try? handle.close()
            try? FileManager.default.removeItem(at: file)
        }
        completionHandler(accepted ? .allow : .cancel)
    }

    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let verdict: DownloadResult? = lock.withLock {
            guard !finished, let output else { return nil }
            received += data.count
            if leading.count < MediaTypeDetector.sniffLength { leading += data.prefix(MediaTypeDetector.sniffLength - leading.count) }
            if type == nil, let decided = decideType(final: false) { return decided }
            let limit = policy.sizeLimit(for: type?.kind)
            if received > limit { return .tooLarge(bytes: received, kind: type?.kind) }
            do {
                try output.write(contentsOf: data)
            } catch {
                return .failed("write: \(error)")
            }
            return nil
        }
        if let verdict {
            dataTask.cancel()
            finish(verdict)
        }
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        if let error {
            finish(.failed(String(describing: error)))
            return
        }
        // The rename and the outcome are one step under `lock`: a deadline firing in between
        // would report a timeout and leave the renamed file behind, attached by nobody.
        finish { () -> DownloadResult in
            // An empty body is no file, whatever its name says.
            guard received > 0 else { return .failed("empty body") }
            if type == nil, let decided = decideType(final: true) { return decided }
            guard let type, let partial else { return .unsupportedFormat("unknown") }
            try? output?.close()
            output = nil
            let file = partial.deletingPathExtension().appendingPathExtension(type.fileExtension)
            do {
                try FileManager.default.moveItem(at: partial, to: file)
            } catch {
                return .failed("rename: \(error)")
            }
            self.partial = nil
            let now = clock.now
            let elapsed = started.map { now - $0 } ?? .zero
            return .downloaded(DownloadedMedia(file: file, type: type, bytes: received, variant: variant,
                                               downloadMS: Int(elapsed.seconds * 1000), finishedAt: now))
        }
    }

    // MARK: Deciding

    /// Settles the type once enough bytes (or all) arrived; returns a verdict when the type
    /// ends the download. Called with `lock` held.
    ///
    /// The bytes have the last word: a type the headers or the URL name is taken only when the
    /// first bytes are of no other known type and do not read as text (a captive portal's or a
    /// CDN's error page served with 200 for `photo.jpg`, which iOS would refuse or show broken).
    private func decideType(final: Bool) -> DownloadResult? {
        guard final || leading.count >= MediaTypeDetector.sniffLength else { return nil }
        let named: MediaType? = if case let .supported(known) = headerGuess { known } else { nil }
        let bytesSay = MediaTypeDetector.fromLeadingBytes(leading)
        // Where the bytes cannot tell a family's members apart, the name says which (its kind's
        // limit was checked against Content-Length with the headers).
        if let named, MediaTypeDetector.refines(named, bytesSay, leadingBytes: leading) {
            type = named
            return nil
        }
        switch bytesSay {
        case let .supported(sniffed):
            type = sniffed
            // Content-Length was checked against the largest limit; now the kind's applies.
            if declared > Int64(policy.sizeLimit(for: sniffed.kind)) { return .tooLarge(bytes: Int(declared), kind: sniffed.kind) }
            return nil
        case let .unsupported(name):
            return .unsupportedFormat(name)
        case .unknown:
            if case let .unsupported(name) = headerGuess { return .unsupportedFormat(name) }
            guard let named, !MediaTypeDetector.readsAsText(leading) else {
                return .unsupportedFormat(named == nil ? "unknown" : "text")
            }
            type = named
            return nil
        }
    }

    /// Delivers the first outcome, cancels what still runs and removes partial files.
    private func finish(_ outcome: DownloadResult) {
        finish { outcome }
    }

    /// `decide` runs with `lock` held, only if nothing finished the download before, and its
    /// outcome is the one delivered: nothing can come between deciding and finishing.
    private func finish(deciding decide: () -> DownloadResult) {
        let state: (outcome: DownloadResult, task: URLSessionDataTask?, session: URLSession?, output: FileHandle?, partial: URL?)? =
            lock.withLock {
                guard !finished else { return nil }
                let outcome = decide()
                finished = true
                defer {
                    output = nil
                    partial = nil
                    session = nil
                }
                return (outcome, task, session, output, partial)
            }
        guard let state else { return }
        let outcome = state.outcome
        if case .downloaded = outcome { reached?(.fileRenamed) }
        try? state.output?.close()
        if case .downloaded = outcome {} else {
            state.task?.cancel()
            if let partial = state.partial { try? FileManager.default.removeItem(at: partial) }
        }
        state.session?.finishTasksAndInvalidate()
        completion(outcome)
    }
}

extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

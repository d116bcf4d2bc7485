import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP exchange with a hard deadline: whatever URLSession does, `send` returns by
/// `timeout` (the request is cancelled then), so a flush can promise its budget. Redirects are
/// never followed: engage does not redirect, and a network that does (a captive portal's login
/// page) must not receive the events; the 3xx itself is the outcome.
struct Transport: Sendable {
    enum Outcome: Sendable, Equatable {
        case response(status: Int, headers: [String: String], body: Data)
        case failed(String)
        case timedOut
        case cancelled
    }

    let session: URLSession

    init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration, delegate: RedirectRefusal(), delegateQueue: nil)
    }

    func invalidate() {
        session.finishTasksAndInvalidate()
    }

    func send(_ request: URLRequest, timeout: Duration) async -> Outcome {
        var request = request
        let seconds = max(0.001, timeout.seconds)
        // The deadline below is the one that counts; URLSession's own timeout (which
        // FoundationNetworking applies in whole seconds, and early) is only a backstop.
        request.timeoutInterval = seconds.rounded(.up) + 1
        let once = ResumeOnce()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                once.set(continuation)
                let task = session.dataTask(with: request) { data, response, error in
                    if let http = response as? HTTPURLResponse {
                        var headers: [String: String] = [:]
                        for (name, value) in http.allHeaderFields {
                            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
                        }
                        once.resume(.response(status: http.statusCode, headers: headers, body: data ?? Data()))
                    } else {
                        once.resume(.failed(error.map { "\($0)" } ?? "no response"))
                    }
                }
                once.attach(task)
                task.resume()
                DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { once.resume(.timedOut) }
            }
        } onCancel: {
            once.resume(.cancelled)
        }
    }
}

/// Answers every redirect with "do not follow".
private final class RedirectRefusal: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    // No state: @unchecked only because NSObject subclasses cannot be checked.
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}

/// Resumes a continuation exactly once, from whichever of the response, the deadline or
/// cancellation comes first, and cancels the data task when it was not the response.
private final class ResumeOnce: @unchecked Sendable {
    // NSLock rather than Synchronization.Mutex: the client also builds for iOS releases older
    // than Mutex. Every access goes through `lock`.
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Transport.Outcome, Never>?
    private var pending: Transport.Outcome?
    private var task: URLSessionDataTask?
    private var done = false

    func set(_ continuation: CheckedContinuation<Transport.Outcome, Never>) {
        lock.lock()
        if let pending {
            lock.unlock()
            continuation.resume(returning: pending)
            return
        }
        self.continuation = continuation
        lock.unlock()
    }

    func attach(_ task: URLSessionDataTask) {
        lock.lock()
        let cancel = done
        self.task = task
        lock.unlock()
        if cancel { task.cancel() }
    }

    func resume(_ outcome: Transport.Outcome) {
        lock.lock()
        guard !done else {
            lock.unlock()
            return
        }
        done = true
        let continuation = self.continuation
        self.continuation = nil
        if continuation == nil { pending = outcome }
        let task = self.task
        lock.unlock()
        continuation?.resume(returning: outcome)
        if case .response = outcome {} else { task?.cancel() }
    }
}

/// How long to wait after a failed attempt: exponential with jitter for failures that say
/// nothing, the server's `Retry-After` (plus a little jitter) when it says how long.
public struct RetryPolicy: Sendable, Equatable {
    /// Delay after the first failure; it doubles with each consecutive failure.
    public var initialDelay: Duration
    public var maxDelay: Duration
    /// Upper bound of the random delay added to a `Retry-After`, so devices told the same
    /// number do not all come back in the same second.
    public var retryAfterJitter: Duration

    public init(initialDelay: Duration = .milliseconds(500), maxDelay: Duration = .seconds(300),
                retryAfterJitter: Duration = .milliseconds(500)) {
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.retryAfterJitter = retryAfterJitter
    }

    /// "Equal jitter": half the exponential delay for sure, the other half at random.
    func backoff(failures: Int, random: Double = Double.random(in: 0...1)) -> TimeInterval {
        let initial = initialDelay.seconds
        let exponent = min(max(failures - 1, 0), 30)
        let delay = min(maxDelay.seconds, initial * pow(2, Double(exponent)))
        return delay / 2 + delay / 2 * random
    }

    /// The server's `Retry-After`, at most `maxDelay`, plus jitter.
    func afterRetryAfter(_ seconds: TimeInterval, random: Double = Double.random(in: 0...1)) -> TimeInterval {
        min(seconds, maxDelay.seconds) + retryAfterJitter.seconds * random
    }

    /// The longest wait this policy ever asks for; a recorded wait beyond it cannot be one of
    /// its own (the wall clock was set back since).
    var longestWait: TimeInterval {
        maxDelay.seconds + retryAfterJitter.seconds
    }

    /// `Retry-After` as delta-seconds or an HTTP-date (RFC 9110 10.2.3); nil when absent or unreadable.
    static func parseRetryAfter(_ value: String?, now: Date = Date()) -> TimeInterval? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value) { return seconds >= 0 ? TimeInterval(seconds) : nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: value) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}

extension Duration {
    var seconds: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

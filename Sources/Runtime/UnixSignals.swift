import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The signals a process can be asked to react to.
public enum UnixSignal: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case sighup
    case sigint
    case sigquit
    case sigterm
    case sigusr1
    case sigusr2
    case sigalrm
    case sigwinch

    /// The platform's signal number.
    public var number: Int32 {
        switch self {
        case .sighup: SIGHUP
        case .sigint: SIGINT
        case .sigquit: SIGQUIT
        case .sigterm: SIGTERM
        case .sigusr1: SIGUSR1
        case .sigusr2: SIGUSR2
        case .sigalrm: SIGALRM
        case .sigwinch: SIGWINCH
        }
    }

    /// The conventional name, e.g. `SIGTERM`.
    public var description: String {
        switch self {
        case .sighup: "SIGHUP"
        case .sigint: "SIGINT"
        case .sigquit: "SIGQUIT"
        case .sigterm: "SIGTERM"
        case .sigusr1: "SIGUSR1"
        case .sigusr2: "SIGUSR2"
        case .sigalrm: "SIGALRM"
        case .sigwinch: "SIGWINCH"
        }
    }
}

public enum UnixSignals {
    /// Delivers the given signals as an async sequence, using Dispatch signal sources.
    ///
    /// While the stream exists the signals' default action (usually ending the process) is turned
    /// off; when the stream terminates (its consumer is cancelled or drops it) the sources are
    /// cancelled and the previous disposition is restored once no other stream listens to that
    /// signal. Signals that arrive in quick succession may be coalesced into one element.
    ///
    /// The function returns once Dispatch has registered the sources (a short wait on Dispatch's
    /// own thread, bounded at one second), so a signal sent right after the call is delivered
    /// even if iteration has not started yet.
    public static func stream(_ signals: [UnixSignal]) -> AsyncStream<UnixSignal> {
        let (stream, continuation) = AsyncStream<UnixSignal>.makeStream(bufferingPolicy: .unbounded)
        let installed = install(signals) { continuation.yield($0) }
        continuation.onTermination = { _ in
            installed.remove()
        }
        return stream
    }

    /// Ignores `signal` for the rest of the process: now if no stream listens to it, else once
    /// the last one ends, instead of restoring its previous disposition. For a signal a service
    /// takes over and that must not end the process the default way after the service stopped
    /// (a SIGHUP while the rest of the server shuts down and its local PostgreSQL is stopped).
    public static func ignoreForGood(_ signal: UnixSignal) {
        SignalDispositions.ignoreForGood(signal.number)
    }

    /// What `signal` does now if it comes.
    public enum Disposition: Sendable, Equatable {
        /// Its default action (for SIGHUP, SIGTERM and SIGINT: the end of the process).
        case defaultAction
        case ignored
        /// A handler takes it (a stream's, through Dispatch).
        case handled
    }

    public static func disposition(of signal: UnixSignal) -> Disposition {
        var current = sigaction()
        sigaction(signal.number, nil, &current)
        // Function pointers compare by address only.
        let handler = unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self)
        if handler == unsafeBitCast(SIG_DFL, to: Int.self) { return .defaultAction }
        return handler == unsafeBitCast(SIG_IGN, to: Int.self) ? .ignored : .handled
    }

    /// Dispatch sources calling `handler` for `signals`, registered when this returns.
    fileprivate static func install(_ signals: [UnixSignal], handler: @escaping @Sendable (UnixSignal) -> Void) -> InstalledSources {
        let queue = DispatchQueue(label: "engage.runtime.unix-signals")
        var unique: [UnixSignal] = []
        for signal in signals where !unique.contains(signal) {
            unique.append(signal)
        }

        var sources: [any DispatchSourceSignal] = []
        for signal in unique {
            SignalDispositions.acquire(signal.number)
            let source = DispatchSource.makeSignalSource(signal: signal.number, queue: queue)
            let registered = DispatchSemaphore(value: 0)
            source.setRegistrationHandler {
                registered.signal()
            }
            source.setEventHandler {
                handler(signal)
            }
            source.resume()
            _ = registered.wait(timeout: .now() + .seconds(1))
            SignalDispositions.sourceRegistered(signal.number)
            sources.append(source)
        }
        return InstalledSources(sources: sources, numbers: unique.map(\.number))
    }
}

/// Signals held while a command starts up, before its services listen for them: their default
/// action (ending the process at once) is off while this object lives, and the first one that
/// arrives is kept, so that the command can stop what it started (a local PostgreSQL, which a
/// signal's default action left running with no one to stop it) and end once start-up is over.
public final class HeldSignals: Sendable {
    private final class State: Sendable {
        struct Value {
            var first: UnixSignal?
            var action: (@Sendable () -> Void)?
        }
        let value = Mutex(Value())
    }

    private let state = State()
    private let installed: InstalledSources

    public init(_ signals: [UnixSignal] = [.sigterm, .sigint]) {
        let state = self.state
        installed = UnixSignals.install(signals) { signal in
            let action = state.value.withLock { value -> (@Sendable () -> Void)? in
                guard value.first == nil else { return nil }
                value.first = signal
                return value.action
            }
            action?()
        }
    }

    /// The first signal held, nil while none came.
    public var first: UnixSignal? { state.value.withLock { $0.first } }

    /// The first signal held, and no `onFirst` action from now on (a later signal is only kept).
    public func disarm() -> UnixSignal? {
        state.value.withLock { value in
            value.action = nil
            return value.first
        }
    }

    /// Runs `action` when the first signal comes (on a thread of its own), or now if it came.
    public func onFirst(_ action: @escaping @Sendable () -> Void) {
        let came = state.value.withLock { value -> Bool in
            value.action = action
            return value.first != nil
        }
        if came { action() }
    }

    deinit {
        installed.remove()
    }
}

/// The Dispatch sources behind one stream; removed exactly once when the stream terminates.
private final class InstalledSources: Sendable {
    /// Dispatch sources are thread-safe objects that are not marked `Sendable`.
    private struct Sources: @unchecked Sendable {
        var list: [any DispatchSourceSignal]
    }

    private let state: Mutex<Sources?>
    private let numbers: [Int32]

    init(sources: [any DispatchSourceSignal], numbers: [Int32]) {
        self.state = Mutex(Sources(list: sources))
        self.numbers = numbers
    }

    func remove() {
        let sources = state.withLock { state in
            defer { state = nil }
            return state
        }
        guard let sources else { return }
        for source in sources.list {
            source.cancel()
        }
        for number in numbers {
            SignalDispositions.release(number)
        }
    }
}

/// Process-wide bookkeeping of signal dispositions, so that streams for the same signal do not
/// restore the default action under each other.
///
/// On Linux, Dispatch delivers signals through a `signalfd` and installs, once per process and
/// signal, a handler that forwards the signal to its own thread. Restoring the previous
/// disposition removes that handler and Dispatch will not install it again, so the handler is
/// remembered after the first registration and put back for later streams.
private enum SignalDispositions {
    private struct Entry: @unchecked Sendable {
        var listeners = 0
        /// The disposition before the first current listener.
        var previous = sigaction()
        /// The disposition Dispatch installed for its source, once known.
        var dispatchAction: sigaction?
    }

    private static let entries = Mutex<[Int32: Entry]>([:])

    static func acquire(_ number: Int32) {
        entries.withLock { entries in
            var entry = entries[number] ?? Entry()
            if entry.listeners == 0 {
                sigaction(number, nil, &entry.previous)
                if var dispatchAction = entry.dispatchAction {
                    sigaction(number, &dispatchAction, nil)
                } else {
                    signal(number, SIG_IGN)
                }
            }
            entry.listeners += 1
            entries[number] = entry
        }
    }

    static func ignoreForGood(_ number: Int32) {
        entries.withLock { entries in
            var entry = entries[number] ?? Entry()
            if entry.listeners == 0 {
                signal(number, SIG_IGN)
            } else {
                // Setting it now would remove Dispatch's handler under the current listeners.
                entry.previous = sigaction()
                entry.previous.__sigaction_handler.sa_handler = SIG_IGN
            }
            entries[number] = entry
        }
    }

    static func sourceRegistered(_ number: Int32) {
        entries.withLock { entries in
            guard var entry = entries[number], entry.dispatchAction == nil else { return }
            var current = sigaction()
            sigaction(number, nil, &current)
            entry.dispatchAction = current
            entries[number] = entry
        }
    }

    static func release(_ number: Int32) {
        entries.withLock { entries in
            guard var entry = entries[number], entry.listeners > 0 else { return }
            entry.listeners -= 1
            if entry.listeners == 0 {
                sigaction(number, &entry.previous, nil)
            }
            entries[number] = entry
        }
    }
}

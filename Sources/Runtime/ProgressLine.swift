import Foundation
import Synchronization

/// One line of progress for a long command (`simulate`, `projections rebuild`, `bench`, ...),
/// redrawn in place on standard error at most every `interval`, and only when standard error is
/// a terminal: output piped or redirected, and logs, carry no progress at all.
///
///     let progress = ProgressLine.standardError("rebuild")
///     for batch in batches {
///         ...
///         progress.update(done, of: total, "events")   // rebuild: 40,000/100,000 events (40%), 3.1 s
///     }
///     progress.finish()                                // erases the line
///
/// A command that prints results while it runs prints them through ``print(_:)``, which erases
/// the progress line first so the two never share a line.
public final class ProgressLine: Sendable {
    /// Where the line goes and what time it is; tests pass their own.
    public struct Terminal: Sendable {
        /// Whether anything is drawn at all.
        public let isTerminal: Bool
        public let write: @Sendable (String) -> Void
        public let now: @Sendable () -> ContinuousClock.Instant

        public init(isTerminal: Bool, write: @escaping @Sendable (String) -> Void,
                    now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
            self.isTerminal = isTerminal
            self.write = write
            self.now = now
        }

        /// The process's standard error, drawn on only when it is a terminal (and `TERM` is not `dumb`).
        public static var standardError: Terminal {
            let dumb = ProcessInfo.processInfo.environment["TERM"] == "dumb"
            return Terminal(isTerminal: isatty(2) == 1 && !dumb) { text in
                FileHandle.standardError.write(Data(text.utf8))
            }
        }
    }

    private struct State {
        var shown = false
        var lastDrawn: ContinuousClock.Instant?
        var finished = false
    }

    public let label: String
    private let terminal: Terminal
    private let interval: Duration
    private let started: ContinuousClock.Instant
    private let state = Mutex(State())

    public init(_ label: String, terminal: Terminal, interval: Duration = .milliseconds(100)) {
        self.label = label
        self.terminal = terminal
        self.interval = interval
        started = terminal.now()
    }

    /// A progress line on standard error (drawn only if it is a terminal).
    public static func standardError(_ label: String) -> ProgressLine {
        ProgressLine(label, terminal: .standardError)
    }

    /// Whether anything is drawn: callers may skip work that only feeds the line.
    public var isActive: Bool { terminal.isTerminal }

    /// `label: done/total unit (percent), elapsed`; without a total, `label: done unit, elapsed`.
    public func update(_ done: Int, of total: Int?, _ unit: String) {
        guard terminal.isTerminal else { return }
        var text = "\(label): \(Self.grouped(done))"
        if let total, total > 0 {
            text += "/\(Self.grouped(total)) \(unit) (\(min(100, done * 100 / total))%)"
        } else {
            text += " \(unit)"
        }
        draw(text)
    }

    /// `label: stage, elapsed`, e.g. `bench append: round 2/3, psql \copy`.
    public func update(_ stage: String) {
        guard terminal.isTerminal else { return }
        draw("\(label): \(stage)")
    }

    /// Prints a line of the command's output to standard output, erasing the progress line first
    /// (the next update draws it again).
    public func print(_ line: String) {
        clear()
        Swift.print(line)
    }

    /// Erases the line; later updates draw nothing.
    public func finish() {
        clear()
        state.withLock { $0.finished = true }
    }

    private func clear() {
        guard terminal.isTerminal else { return }
        let wasShown = state.withLock { state -> Bool in
            defer { state.shown = false; state.lastDrawn = nil }
            return state.shown
        }
        if wasShown { terminal.write("\r\u{1B}[2K") }
    }

    /// Draws `text` and the time since the start, unless the last drawing is less than `interval` old.
    private func draw(_ text: String) {
        let now = terminal.now()
        let due = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            if let last = state.lastDrawn, now - last < interval { return false }
            state.lastDrawn = now
            state.shown = true
            return true
        }
        guard due else { return }
        let (seconds, attoseconds) = (now - started).components
        terminal.write("\r\u{1B}[2K" + text + String(format: ", %.1f s", Double(seconds) + Double(attoseconds) / 1e18))
    }

    /// 1234567 as `1,234,567`.
    public static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var result = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return (value < 0 ? "-" : "") + result
    }
}

import Foundation
import JSONText
import Synchronization

/// How important a log line is; a logger writes lines at or above its threshold.
public enum LogLevel: String, Sendable, CaseIterable, Comparable, OptionValue {
    case trace, debug, info, notice, warning, error

    private var severity: Int {
        switch self {
        case .trace: 0
        case .debug: 1
        case .info: 2
        case .notice: 3
        case .warning: 4
        case .error: 5
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool {
        lhs.severity < rhs.severity
    }
}

/// The shape of one log line.
public enum LogFormat: String, Sendable, CaseIterable, OptionValue {
    /// `ts=2026-11-29T19:16:23.123Z level=info msg=http.request label=engage.http route=/v1/events`
    case logfmt
    /// `{"ts":"2026-11-29T19:16:23.123Z","level":"info","msg":"http.request",...}`
    case json
}

/// Where finished log lines go. `write` receives one line without its newline and must write
/// it whole, never interleaved with another line.
public protocol LogSink: Sendable {
    func write(_ line: String)
}

/// Writes lines to a file descriptor with one `write(2)` per line, under a lock.
public final class FileDescriptorLogSink: LogSink {
    /// The process's standard error, the default sink.
    public static let standardError = FileDescriptorLogSink(fileDescriptor: 2)

    private let fileDescriptor: Mutex<Int32>

    /// The descriptor is borrowed: the sink never closes it.
    public init(fileDescriptor: Int32) {
        self.fileDescriptor = Mutex(fileDescriptor)
    }

    public func write(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        fileDescriptor.withLock { descriptor in
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                    if written > 0 {
                        offset += written
                    } else if written < 0 && errno == EINTR {
                        continue
                    } else {
                        return // Nowhere left to report a failing log destination.
                    }
                }
            }
        }
    }
}

/// Keeps lines in memory, for tests.
public final class MemoryLogSink: LogSink {
    private let storage = Mutex<[String]>([])

    public init() {}

    public func write(_ line: String) {
        storage.withLock { $0.append(line) }
    }

    /// Every line written so far, oldest first.
    public var lines: [String] {
        storage.withLock { $0 }
    }

    public func removeAll() {
        storage.withLock { $0.removeAll() }
    }
}

/// A structured logger: constant messages with dotted metadata keys, one line per call.
///
///     let logger = Logger(label: "engage.ingest", level: .info)
///     logger.info("batch.appended", ["event.count": "100", "batch.ms": "3.2"])
///
/// Loggers are values passed to the components that log; `with(_:)` returns a copy that adds
/// metadata to every line (e.g. a request id). Metadata given per call wins over the logger's.
public struct Logger: Sendable {
    public var label: String
    public var level: LogLevel
    public var format: LogFormat
    public var metadata: [String: String]
    public var sink: any LogSink
    /// The source of timestamps; tests pass a fixed date.
    public var now: @Sendable () -> Date

    public init(
        label: String,
        level: LogLevel = .info,
        format: LogFormat = .logfmt,
        metadata: [String: String] = [:],
        sink: any LogSink = FileDescriptorLogSink.standardError,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.label = label
        self.level = level
        self.format = format
        self.metadata = metadata
        self.sink = sink
        self.now = now
    }

    /// A copy of this logger that adds `metadata` to every line.
    public func with(_ metadata: [String: String]) -> Logger {
        var copy = self
        copy.metadata.merge(metadata) { _, new in new }
        return copy
    }

    /// Whether a line at `level` would be written; use it to skip expensive preparation.
    public func isEnabled(_ level: LogLevel) -> Bool {
        level >= self.level
    }

    /// Writes one line if `level` reaches the threshold. The metadata is only built if it does.
    public func log(_ level: LogLevel, _ message: String, _ metadata: @autoclosure () -> [String: String] = [:]) {
        guard isEnabled(level) else { return }
        var fields = self.metadata
        fields.merge(metadata()) { _, new in new }
        let line = LogLine(timestamp: now(), level: level, message: message, label: label, metadata: fields)
        sink.write(line.rendered(as: format))
    }

    public func trace(_ message: String, _ metadata: @autoclosure () -> [String: String] = [:]) {
        log(.trace, message, metadata())
    }

    public func debug(_ message: String, _ metadata: @autoclosure () -> [String: String] = [:]) {
        log(.debug, message, metadata())
    }

    public func info(_ message: String, _ metadata: @autoclosure () -> [String: String] = [:]) {
        log(.info, message, metadata())
    }

    public func notice(_ message: String, _ metadata: @autoclosure () -> [String: String] = [:]) {
        log(.notice, message, metadata())
    }

    public func warning(_ message: String, _ metadata: @autoclosure () -> [String: String] = [:]) {
        log(.warning, message, metadata())
    }

    public func error(_ message: String, _ metadata: @autoclosure () -> [String: String] = [:]) {
        log(.error, message, metadata())
    }
}

/// One line before rendering. Fixed fields come first (`ts`, `level`, `msg`, `label`), then the
/// metadata sorted by key; a metadata key equal to a fixed field's name is written with a `_`
/// prefix so that no line carries the same key twice.
struct LogLine {
    static let fixedKeys: Set<String> = ["ts", "level", "msg", "label"]

    var timestamp: Date
    var level: LogLevel
    var message: String
    var label: String
    var metadata: [String: String]

    func rendered(as format: LogFormat) -> String {
        var fields: [(String, String)] = [
            ("ts", Self.iso8601(timestamp)),
            ("level", level.rawValue),
            ("msg", message),
            ("label", label),
        ]
        let extra = metadata.map { key, value in (Self.fixedKeys.contains(key) ? "_" + key : key, value) }
        fields += extra.sorted { $0.0 < $1.0 }
        switch format {
        case .logfmt:
            return fields.map { LogfmtEscaping.key($0.0) + "=" + LogfmtEscaping.value($0.1) }.joined(separator: " ")
        case .json:
            return "{" + fields.map { JSONString.render($0.0) + ":" + JSONString.render($0.1) }.joined(separator: ",") + "}"
        }
    }

    /// `2026-11-29T19:16:23.123Z`: UTC, milliseconds, truncated rather than rounded.
    static func iso8601(_ date: Date) -> String {
        let microseconds = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        let milliseconds = microseconds.floorDivided(by: 1000)
        var seconds = time_t(milliseconds.floorDivided(by: 1000))
        let fraction = Int(milliseconds - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return padded(Int(parts.tm_year) + 1900, 4) + "-" + padded(Int(parts.tm_mon) + 1, 2) + "-"
            + padded(Int(parts.tm_mday), 2) + "T" + padded(Int(parts.tm_hour), 2) + ":"
            + padded(Int(parts.tm_min), 2) + ":" + padded(Int(parts.tm_sec), 2) + "."
            + padded(fraction, 3) + "Z"
    }

    private static func padded(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

extension Int64 {
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor < 0) ? quotient - 1 : quotient
    }
}

/// logfmt as read by common collectors: bare values when safe, otherwise a double-quoted JSON
/// string (`\"`, `\\`, `\n`, `\t`, `\u00XX`, ...).
enum LogfmtEscaping {
    static func value(_ value: String) -> String {
        needsQuoting(value) ? JSONString.render(value) : value
    }

    /// Keys are never quoted; characters that would break the line become `_`.
    static func key(_ key: String) -> String {
        guard !key.isEmpty else { return "_" }
        var result = ""
        for scalar in key.unicodeScalars {
            let unsafe = scalar == "=" || scalar == "\"" || scalar.value <= 0x20 || scalar.value == 0x7F
            result.unicodeScalars.append(unsafe ? "_" : scalar)
        }
        return result
    }

    private static func needsQuoting(_ value: String) -> Bool {
        if value.isEmpty { return true }
        return value.unicodeScalars.contains { scalar in
            scalar == "=" || scalar == "\"" || scalar == "\\" || scalar.value <= 0x20 || scalar.value == 0x7F
        }
    }
}

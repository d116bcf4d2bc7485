#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What the queue knows without listing its directories: the segment appends go to, how many
/// events it holds, and the bytes of every waiting and claimed segment. It lives in the lock
/// file and changes only under its lock, so recording an event costs the same with 10 or 10,000
/// events waiting.
///
/// It is a hint, not a record: it is not fsynced, and whenever it is missing or unreadable (or
/// a claim lists the directories anyway) it is rebuilt from the files themselves.
struct QueueIndex: Equatable {
    /// The segment number appends go to; every segment in `ready/` or `claimed/` has a lower or
    /// equal number.
    var head: Int64
    var headEvents: Int
    var bytes: Int

    /// Fixed width, so that rewriting it in place never leaves a longer old text behind.
    var text: [UInt8] {
        Array("engage-queue 1 head=\(Self.pad(head, 20)) events=\(Self.pad(Int64(headEvents), 10)) bytes=\(Self.pad(Int64(bytes), 20))\n".utf8)
    }

    /// Beyond any queue (2^62): a damaged index reading more is rebuilt from the files, so that
    /// `head += 1` and `bytes + size` cannot overflow.
    static let largest: Int64 = 1 << 62

    init(head: Int64, headEvents: Int, bytes: Int) {
        self.head = head
        self.headEvents = headEvents
        self.bytes = bytes
    }

    init?(text: [UInt8]) {
        let fields = String(decoding: text, as: UTF8.self).split(separator: "\n").first?.split(separator: " ") ?? []
        guard fields.count == 5, fields[0] == "engage-queue", fields[1] == "1",
              let head = Self.value(fields[2], "head="), let events = Self.value(fields[3], "events="),
              let bytes = Self.value(fields[4], "bytes="), (1..<Self.largest).contains(head), (0..<Self.largest).contains(events),
              (0..<Self.largest).contains(bytes)
        else { return nil }
        self.init(head: head, headEvents: Int(events), bytes: Int(bytes))
    }

    /// Reads the index from the locked descriptor; nil when it was never written or is damaged.
    static func read(from descriptor: Int32) -> QueueIndex? {
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return QueueIndex(text: Array(buffer[..<count]))
    }

    /// Writes the index in place. When the write fails or is cut short, the file is emptied
    /// instead, so that the next reader rebuilds the index from the files rather than trust an old
    /// one (an old head can name a segment that was claimed since). False only when neither worked.
    @discardableResult
    func write(to descriptor: Int32) -> Bool {
        let bytes = text
        let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        guard written == bytes.count else { return ftruncate(descriptor, 0) == 0 }
        _ = ftruncate(descriptor, off_t(bytes.count))
        return true
    }

    private static func value(_ field: Substring, _ prefix: String) -> Int64? {
        field.hasPrefix(prefix) ? Int64(field.dropFirst(prefix.count)) : nil
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

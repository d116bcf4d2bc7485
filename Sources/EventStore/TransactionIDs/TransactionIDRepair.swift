/// How an operator moves a database's transaction counter past the log: `pg_resetwal -e` on the
/// stopped cluster, which gives the counter a new epoch (the high 32 bits of an `xid8`) and keeps
/// its 32-bit part.
///
/// Only the epoch moves, not the 32-bit counter (`-x`): the 32-bit ids are what the database's own
/// rows carry and compares modulo 2^32, so moving that counter more than 2^31 past the restored
/// rows' ids would make them look written in the future and vanish, and `-x` also needs `pg_xact`
/// segments made by hand for the new ids. The epoch is stored nowhere but in the control file
/// (pg_resetwal's documentation: "any value will work so far as the database itself is
/// concerned"); only `xid8` values such as the log's `transaction_id` see it, which is the point.
/// One epoch is 2^32 ids, and 2^32 epochs are available.
public struct TransactionIDRepair: Sendable, Equatable {
    /// The highest transaction id held by the log or any of its readers.
    public var highest: UInt64
    /// The database's next transaction id now.
    public var next: UInt64

    public init(highest: UInt64, next: UInt64) {
        self.highest = highest
        self.next = next
    }

    /// Whether the counter is behind: `highest` is an id the database has not assigned yet.
    public var isNeeded: Bool { highest >= next }

    /// The epoch for `pg_resetwal -e`.
    public var epoch: UInt32 { Self.epoch(above: highest) }

    /// The database's next transaction id once repaired: the new epoch, the same 32-bit counter.
    public var nextAfterRepair: UInt64 { UInt64(epoch) << 32 | (next & 0xFFFF_FFFF) }

    /// The smallest epoch whose every id is above `held`.
    public static func epoch(above held: UInt64) -> UInt32 { UInt32(clamping: (held >> 32) + 1) }

    /// The commands to run, as the user that owns the data directory (postgres), on the host of
    /// the cluster whose data directory is `dataDirectory`. pg_resetwal refuses a cluster that
    /// was not shut down cleanly, hence the fast (clean) stop first.
    public func commands(dataDirectory: String) -> [String] {
        let directory = Self.shellWord(dataDirectory)
        return ["pg_ctl stop -D \(directory) -m fast",
                "pg_resetwal -e \(epoch) -D \(directory)",
                "pg_ctl start -D \(directory)"]
    }

    /// `text` as one word for a POSIX shell, quoted only when it needs to be, so the commands can
    /// be pasted as printed.
    static func shellWord(_ text: String) -> String {
        let plain = !text.isEmpty && text.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "/._-+:@%".unicodeScalars.contains(scalar))
        }
        return plain ? text : "'" + text.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}

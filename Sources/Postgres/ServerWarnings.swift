import CLibPQ

/// A WARNING the server sent on a connection.
public struct PostgresWarning: Sendable, Equatable {
    public var sqlState: String?
    /// The server's text, which may quote values: for `debugDescription`, not for logs.
    public var message: String
    public var detail: String?
}

/// The WARNINGs one connection received, counted so that a caller can tell whether one arrived
/// while a statement ran (`Connection.failingOnWarnings`). NOTICE and below are dropped, as
/// before: libpq would otherwise print them to stderr.
///
/// A commit whose wait for synchronous replication is cancelled (`pg_cancel_backend`, a fast
/// shutdown, a cancel request) is committed on the primary alone, and PostgreSQL says so only in
/// a WARNING before reporting the statement complete: that warning is what this exists for.
///
/// Owned by its `Connection`, which hands libpq an unretained pointer to it and finishes the
/// connection (after which libpq never calls back) before releasing it. Touched only on the
/// connection's thread, inside libpq calls: not thread-safe, hence not Sendable.
final class ServerWarnings {
    private(set) var count = 0
    private(set) var last: PostgresWarning?

    /// Installs the receiver on `handle`; `self` must outlive the connection.
    func receive(on handle: OpaquePointer) {
        PQsetNoticeReceiver(handle, { context, result in
            guard let context, let result else { return }
            Unmanaged<ServerWarnings>.fromOpaque(context).takeUnretainedValue().record(result)
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    private func record(_ result: OpaquePointer) {
        func field(_ code: Character) -> String? {
            guard let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: value)
        }
        // The severity as the server names it, whatever lc_messages says.
        guard field("V") == "WARNING" else { return }
        count += 1
        last = PostgresWarning(sqlState: field("C"), message: field("M") ?? "", detail: field("D"))
    }
}

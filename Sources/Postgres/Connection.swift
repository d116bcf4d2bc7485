import CLibPQ
import Glibc
import Foundation
import Synchronization

/// One libpq connection. Blocking: use it from a thread you own (the pool gives each connection
/// its own thread), never from Swift's cooperative pool. Not thread-safe, hence not Sendable.
public final class Connection {
    private var handle: OpaquePointer?
    public let configuration: PostgresConfiguration
    private let warnings = ServerWarnings()
    private let interrupter: ConnectionInterrupter?
    /// A duplicate of libpq's socket, owned here, for the interrupter: libpq closes its own
    /// descriptor when the connection breaks, and that number may then go to another thread's
    /// socket (an HTTP client's, another connection's) before this connection is closed.
    /// Shutting the duplicate down ends libpq's wait just the same.
    private var interruptionSocket: Int32 = -1
    /// Unique among the connections this process made: a session-level state (an advisory lock, a
    /// LISTEN) belongs to one connection, and a connection that replaced a broken one may get the
    /// same backend pid on a restarted or another server.
    public let serial = Connection.nextSerial.add(1, ordering: .relaxed).newValue
    private static let nextSerial = Atomic<UInt64>(0)

    /// Connects, blocking until the server answers or the connect timeout passes. An
    /// `interrupter` can end this connection's blocking calls from another thread.
    public init(configuration: PostgresConfiguration, interrupter: ConnectionInterrupter? = nil) throws {
        self.configuration = configuration
        self.interrupter = interrupter
        // libpq takes the last value given for a keyword. Engage's defaults come before the
        // connection string, so a URL's own connect_timeout, keepalive settings or
        // application_name win; client_encoding comes after it, since engage sends UTF-8.
        let defaults = configuration.connectionDefaults
        let keywords = defaults.map(\.keyword) + ["dbname", "client_encoding"]
        let values = defaults.map(\.value) + [configuration.connectionString, "UTF8"]
        // expand_dbname=1: the first dbname value may itself be a URL or a key/value string.
        handle = withCStringArray(keywords) { keywordPointers in
            withCStringArray(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let handle else {
            throw PostgresError.cannotConnect("out of memory creating a connection")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = Self.errorMessage(handle)
            PQfinish(handle)
            self.handle = nil
            throw PostgresError.cannotConnect("cannot connect to \(configuration): \(message)")
        }
        // Warnings are counted (see `failingOnWarnings`); other notices go nowhere.
        warnings.receive(on: handle)
        if let interrupter {
            interruptionSocket = fcntl(PQsocket(handle), F_DUPFD_CLOEXEC, 0)
            guard interruptionSocket >= 0 else {
                let problem = String(cString: strerror(errno))
                PQfinish(handle)
                self.handle = nil
                throw PostgresError(kind: .connection, message: "cannot duplicate the connection's socket: \(problem)")
            }
            interrupter.attach(socket: interruptionSocket)
        }
        // An interrupted unit only shuts its socket: the server would go on with the statement
        // (a wait for a lock that a busy database holds, a long read) until it tried to answer,
        // keeping its transaction and locks, and the next try of the same work would queue behind
        // it (`ProjectorLockWaitTests`). Checking for a client gone ends it within a second.
        // PostgreSQL 14 and newer; 13 has no such check.
        // engage's SQL writes a backslash in a string literal as itself (partition bounds and
        // index shapes are read with regular expressions); a database or role may still start
        // sessions with standard_conforming_strings off, where `\(` would read as `(`.
        do {
            _ = try query("""
                SELECT set_config('standard_conforming_strings', 'on', false),
                       CASE WHEN current_setting('server_version_num')::int >= 140000
                            THEN set_config('client_connection_check_interval', '1s', false) END
                """)
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    public func close() {
        if interruptionSocket >= 0 {
            interrupter?.detach(socket: interruptionSocket)
            Glibc.close(interruptionSocket)
        }
        interruptionSocket = -1
        if let handle { PQfinish(handle) }
        handle = nil
    }

    /// libpq's socket, or -1 once the connection is closed or libpq dropped it.
    var descriptor: Int32 {
        handle.map(PQsocket) ?? -1
    }

    /// False once the connection is closed or broken. Also notices a server that went away while
    /// this connection sat idle (the server's goodbye is already readable on the socket).
    public var isHealthy: Bool {
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return false }
        let socket = descriptor
        guard socket >= 0 else { return false }
        // An idle connection has nothing to read unless the server said goodbye (a FATAL message,
        // then end of file, which may take two reads to see).
        var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        for _ in 0..<4 {
            guard poll(&poller, 1, 0) > 0 else { break }
            if PQconsumeInput(handle) == 0 { return false }
            if PQstatus(handle) != CONNECTION_OK { return false }
            if let result = PQgetResult(handle) {
                // Unsolicited error while idle: the session is over.
                PQclear(result)
                return false
            }
        }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// True when no transaction is open and nothing is in progress.
    public var isIdle: Bool {
        guard let handle else { return false }
        return PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    /// The server's process id for this session.
    public var backendPID: Int32 {
        guard let handle else { return 0 }
        return PQbackendPID(handle)
    }

    private func requireHandle() throws -> OpaquePointer {
        guard let handle else { throw PostgresError(kind: .connection, message: "connection is closed") }
        return handle
    }

    // MARK: Statements

    /// Runs one statement with its parameters; rows come back in binary format.
    @discardableResult
    public func query(_ sql: SQL) throws -> QueryResult {
        let handle = try requireHandle()
        let parameters = sql.parameters
        for parameter in parameters where parameter.format == .text {
            if parameter.bytes?.contains(0) == true {
                throw PostgresError(kind: .encoding, message: "a text parameter contains a NUL byte")
            }
        }
        let types = parameters.map { Oid($0.typeOID) }
        let formats = parameters.map { $0.format.rawValue }
        let lengths = parameters.map { Int32($0.bytes?.count ?? 0) }
        // Text parameters must be NUL-terminated for libpq; binary ones are sent by length.
        let buffers: [[UInt8]?] = parameters.map { parameter in
            guard var bytes = parameter.bytes else { return nil }
            if parameter.format == .text { bytes.append(0) }
            return bytes
        }
        let result = withParameterPointers(buffers) { valuePointers in
            PQexecParams(handle, sql.text, Int32(parameters.count), types, valuePointers, lengths, formats, 1)
        }
        return try check(result, handle: handle)
    }

    /// Runs one statement and returns the number of rows it affected.
    @discardableResult
    public func execute(_ sql: SQL) throws -> Int {
        try query(sql).affectedRows
    }

    /// Runs a script of several statements without parameters (simple query protocol), e.g. a migration.
    public func executeScript(unsafeSQL script: String) throws {
        let handle = try requireHandle()
        guard PQsendQuery(handle, script) == 1 else { throw connectionError(handle) }
        _ = try collectResults(handle)
    }

    /// Runs several statements without parameters (`...; COMMIT; SELECT ...`) in one round trip
    /// (simple query protocol) and returns the rows of the last statement that returned any kind
    /// of result set. Those rows come in text format: read their cells as strings (`text` columns).
    /// The first error stops the rest of the statements and is thrown.
    public func queryScript(_ sql: SQL) throws -> QueryResult? {
        let handle = try requireHandle()
        guard sql.parameters.isEmpty else {
            throw PostgresError(kind: .encoding, message: "a script takes no parameters")
        }
        guard PQsendQuery(handle, sql.text) == 1 else { throw connectionError(handle) }
        return try collectResults(handle).lastRows
    }

    /// Reads every result of what was sent, to the end, so that the connection can be used
    /// again; throws the first error once all are read.
    private func collectResults(_ handle: OpaquePointer) throws -> (first: QueryResult?, lastRows: QueryResult?) {
        var first: QueryResult?
        var lastRows: QueryResult?
        var firstError: PostgresError?
        while let result = PQgetResult(handle) {
            let returnedRows = PQresultStatus(result) == PGRES_TUPLES_OK
            do {
                let checked = try check(result, handle: handle)
                if first == nil { first = checked }
                if returnedRows { lastRows = checked }
            } catch let error as PostgresError {
                if firstError == nil { firstError = error }
            }
        }
        if let firstError { throw firstError }
        return (first, lastRows)
    }

    /// Runs `body` inside BEGIN/COMMIT; rolls back if it throws. A WARNING during the COMMIT
    /// makes it throw `.unconfirmedCommit` (see `failingOnWarnings`).
    @discardableResult
    public func transaction<T>(isolation: TransactionIsolation = .readCommitted, _ body: (Connection) throws -> T) throws -> T {
        try execute(SQL(unsafeSQL: "BEGIN ISOLATION LEVEL \(isolation.text)"))
        do {
            let value = try body(self)
            try failingOnWarnings { try $0.execute("COMMIT") }
            return value
        } catch {
            if isHealthy { _ = try? execute("ROLLBACK") }
            throw error
        }
    }

    /// How many WARNINGs the server has sent on this session, and the last of them: a session
    /// that ends right after one while its COMMIT waited for the standbys ("The transaction has
    /// already committed locally") made its change (`StandbyConfirmation.confirmedTransaction`).
    public var warningsReceived: (count: Int, last: PostgresWarning?) { (warnings.count, warnings.last) }

    /// Runs `body` and throws `.unconfirmedCommit` if the server sent a WARNING meanwhile, even
    /// though every statement succeeded. A commit whose wait for synchronous replication was
    /// cancelled reports success after such a warning, with the transaction committed on the
    /// primary alone: not as durable as configured, so never to be acknowledged. Any other
    /// warning during a commit is taken the same way: the caller retries (idempotently).
    @discardableResult
    public func failingOnWarnings<T>(_ body: (Connection) throws -> T) throws -> T {
        let before = warnings.count
        let value = try body(self)
        guard warnings.count == before else {
            let warning = warnings.last
            throw PostgresError(
                kind: .unconfirmedCommit, sqlState: warning?.sqlState,
                message: "the server warned during the commit, which may have reached the primary alone",
                detail: [warning?.message, warning?.detail].compactMap { $0 }.joined(separator: " "))
        }
        return value
    }

    /// Runs `statement` (without parameters, e.g. `FETCH 1000 FROM replay`) again and again until
    /// it returns no rows, handing each result to `body`. The next run is sent before `body` sees
    /// the current rows, so the server produces the next chunk while the caller works on this one
    /// (as far as the socket buffers hold it: chunks that fit there overlap best).
    public func repeatUntilEmpty(_ statement: SQL, _ body: (QueryResult) throws -> Void) throws {
        let handle = try requireHandle()
        guard statement.parameters.isEmpty else {
            throw PostgresError(kind: .encoding, message: "a repeated statement takes no parameters")
        }
        func send() throws {
            // Binary results, as `query` asks for.
            guard PQsendQueryParams(handle, statement.text, 0, nil, nil, nil, nil, 1) == 1 else {
                throw connectionError(handle)
            }
        }
        /// The result of the statement in flight, read to the end so that the next can be sent.
        func receive() throws -> QueryResult {
            var outcome: Result<QueryResult, Error>?
            while let result = PQgetResult(handle) {
                let checked = Result { try check(result, handle: handle) }
                if outcome == nil { outcome = checked }
            }
            guard let outcome else { throw connectionError(handle) }
            return try outcome.get()
        }
        try send()
        while true {
            let rows = try receive()
            if rows.isEmpty { return }
            try send()
            do {
                try body(rows)
            } catch {
                _ = try? receive()
                throw error
            }
        }
    }

    // MARK: COPY

    /// Streams `data` (in the format the COPY statement names) to `COPY ... FROM STDIN`.
    /// Returns the number of rows copied.
    @discardableResult
    public func copyIn(_ sql: SQL, data: [UInt8]) throws -> Int {
        try copyIn(sql) { send in try send(data) }
    }

    /// Streams chunks to `COPY ... FROM STDIN`; `produce` calls `send` once per chunk. The text
    /// may hold statements before and after the COPY (`BEGIN; COPY ...`, `COPY ...; COMMIT`):
    /// they run in the same round trips, and the count returned is the COPY's.
    @discardableResult
    public func copyIn(_ sql: SQL, produce: ((([UInt8]) throws -> Void)) throws -> Void) throws -> Int {
        try copyInResults(sql, produce: produce).copied
    }

    /// Streams `data` to a COPY whose text ends with a statement returning rows
    /// (`COPY ... FROM STDIN; COMMIT; SELECT ...`): returns those rows, in text format (see
    /// `queryScript`), or nil if no statement returned any.
    public func copyInReturningRows(_ sql: SQL, data: [UInt8]) throws -> QueryResult? {
        try copyInResults(sql) { send in try send(data) }.lastRows
    }

    private func copyInResults(_ sql: SQL, produce: ((([UInt8]) throws -> Void)) throws -> Void) throws -> (copied: Int, lastRows: QueryResult?) {
        let handle = try requireHandle()
        guard sql.parameters.isEmpty else {
            throw PostgresError(kind: .encoding, message: "COPY statements cannot take parameters")
        }
        guard let start = PQexec(handle, sql.text) else { throw connectionError(handle) }
        let status = PQresultStatus(start)
        if status != PGRES_COPY_IN {
            _ = try check(start, handle: handle)
            throw PostgresError(kind: .protocolViolation, message: "statement did not start COPY FROM STDIN")
        }
        PQclear(start)
        var producerError: Error?
        do {
            try produce { chunk in
                let sent = chunk.withUnsafeBytes { raw in
                    PQputCopyData(handle, raw.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(raw.count))
                }
                if sent != 1 { throw self.connectionError(handle) }
            }
        } catch {
            producerError = error
        }
        let ended = producerError == nil ? PQputCopyEnd(handle, nil) : PQputCopyEnd(handle, "aborted by client")
        if ended != 1 { throw connectionError(handle) }
        let results: (first: QueryResult?, lastRows: QueryResult?)
        do {
            results = try collectResults(handle)
        } catch {
            throw producerError ?? error
        }
        if let producerError { throw producerError }
        return (results.first?.affectedRows ?? 0, results.lastRows)
    }

    /// Runs `COPY ... TO STDOUT` and hands the data to `receive` in chunks of whole rows (of about
    /// `chunkBytes`, more for a longer row); returns the number of rows. When `receive` throws,
    /// the COPY is cancelled on the server and the error rethrown.
    @discardableResult
    public func copyOut(_ sql: SQL, chunkBytes: Int = 256 * 1024, receive: ([UInt8]) throws -> Void) throws -> Int {
        let handle = try requireHandle()
        guard sql.parameters.isEmpty else {
            throw PostgresError(kind: .encoding, message: "COPY statements cannot take parameters")
        }
        guard let start = PQexec(handle, sql.text) else { throw connectionError(handle) }
        if PQresultStatus(start) != PGRES_COPY_OUT {
            _ = try check(start, handle: handle)
            throw PostgresError(kind: .protocolViolation, message: "statement did not start COPY TO STDOUT")
        }
        PQclear(start)
        var chunk: [UInt8] = []
        chunk.reserveCapacity(chunkBytes + 4096)
        var receiverError: Error?
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            let length = PQgetCopyData(handle, &buffer, 0)
            if length == -1 { break }
            if length < 0 { throw connectionError(handle) }
            guard let buffer else { continue }
            if receiverError == nil {
                buffer.withMemoryRebound(to: UInt8.self, capacity: Int(length)) { bytes in
                    chunk.append(contentsOf: UnsafeBufferPointer(start: bytes, count: Int(length)))
                }
            }
            PQfreemem(buffer)
            if receiverError == nil && chunk.count >= chunkBytes {
                do { try receive(chunk) } catch {
                    receiverError = error
                    cancelRunningStatement(handle)
                }
                chunk.removeAll(keepingCapacity: true)
            }
        }
        if receiverError == nil && !chunk.isEmpty {
            do { try receive(chunk) } catch { receiverError = error }
        }
        var copied = 0
        var serverError: PostgresError?
        while let result = PQgetResult(handle) {
            do { copied = try check(result, handle: handle).affectedRows } catch let error as PostgresError {
                if serverError == nil { serverError = error }
            }
        }
        if let receiverError { throw receiverError }
        if let serverError { throw serverError }
        return copied
    }

    /// Asks the server to cancel what this connection runs; the statement then ends with an error.
    private func cancelRunningStatement(_ handle: OpaquePointer) {
        guard let cancel = PQgetCancel(handle) else { return }
        defer { PQfreeCancel(cancel) }
        var message = [CChar](repeating: 0, count: 256)
        _ = PQcancel(cancel, &message, Int32(message.count))
    }

    // MARK: LISTEN / NOTIFY

    public func listen(_ channel: String) throws {
        try execute("LISTEN \(identifier: channel)")
    }

    public func unlisten(_ channel: String) throws {
        try execute("UNLISTEN \(identifier: channel)")
    }

    public func notify(_ channel: String, payload: String = "") throws {
        try execute("SELECT pg_notify(\(channel), \(payload))")
    }

    /// Waits up to `timeout` for notifications on channels this connection listens to; returns
    /// every notification already received (possibly none when the timeout passes).
    public func waitForNotifications(timeout: Duration) throws -> [PostgresNotification] {
        let handle = try requireHandle()
        var received = drainNotifications(handle)
        if !received.isEmpty { return received }
        let socket = PQsocket(handle)
        guard socket >= 0 else { throw connectionError(handle) }
        var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let ready = poll(&poller, 1, milliseconds)
        if ready < 0 && errno != EINTR {
            throw PostgresError(kind: .connection, message: "poll failed: errno \(errno)")
        }
        if ready > 0 {
            guard PQconsumeInput(handle) == 1 else { throw connectionError(handle) }
            received = drainNotifications(handle)
        }
        return received
    }

    private func drainNotifications(_ handle: OpaquePointer) -> [PostgresNotification] {
        var notifications: [PostgresNotification] = []
        while let notify = PQnotifies(handle) {
            notifications.append(PostgresNotification(
                channel: String(cString: notify.pointee.relname),
                payload: String(cString: notify.pointee.extra),
                senderPID: notify.pointee.be_pid))
            PQfreemem(notify)
        }
        return notifications
    }

    // MARK: Errors

    private func check(_ result: OpaquePointer?, handle: OpaquePointer) throws -> QueryResult {
        guard let result else { throw connectionError(handle) }
        interrupter?.answered(at: .now)
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY, PGRES_COPY_IN:
            return QueryResult(taking: result)
        default:
            let error = Self.serverError(result, handle: handle)
            PQclear(result)
            throw error
        }
    }

    private func connectionError(_ handle: OpaquePointer) -> PostgresError {
        PostgresError(kind: .connection, message: Self.errorMessage(handle))
    }

    static func errorMessage(_ handle: OpaquePointer) -> String {
        guard let message = PQerrorMessage(handle) else { return "unknown error" }
        let text = String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? "unknown error" : text
    }

    private static func serverError(_ result: OpaquePointer, handle: OpaquePointer) -> PostgresError {
        func field(_ code: Character) -> String? {
            guard let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: value)
        }
        let sqlState = field("C")
        let primary = field("M") ?? errorMessage(handle)
        // Without an SQLSTATE the server never answered: the connection is the problem.
        let kind: PostgresError.Kind = sqlState == nil && PQstatus(handle) != CONNECTION_OK ? .connection : .server
        var error = PostgresError(kind: kind, sqlState: sqlState, message: primary, detail: field("D"), hint: field("H"))
        error.constraintName = field("n")
        error.tableName = field("t")
        return error
    }
}

/// A NOTIFY received on a LISTENing connection.
public struct PostgresNotification: Sendable, Equatable {
    public var channel: String
    public var payload: String
    public var senderPID: Int32
}

/// Builds a NULL-terminated array of C strings valid for the duration of `body`.
private func withCStringArray<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// Pointers to each parameter's bytes (nil for NULL), valid for the duration of `body`.
private func withParameterPointers<T>(_ buffers: [[UInt8]?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T {
    let copies: [UnsafeMutablePointer<CChar>?] = buffers.map { buffer in
        guard let buffer else { return nil }
        let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(buffer.count, 1))
        buffer.withUnsafeBytes { raw in
            if let base = raw.baseAddress { copy.update(from: base.assumingMemoryBound(to: CChar.self), count: buffer.count) }
        }
        return copy
    }
    defer { copies.forEach { $0?.deallocate() } }
    let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
}

import Foundation
import Glibc
import Synchronization
import Testing
import TestSupport

@testable import Postgres

@Suite("Interrupting a connection's blocking call", .serialized)
struct ConnectionInterruptionTests {
    let configuration: PostgresConfiguration

    init() throws {
        configuration = try TestPostgres.freshDatabase(migrated: false)
    }

    @Test func aRunningCallEndsAsInterrupted() throws {
        let interrupter = ConnectionInterrupter()
        let connection = try Connection(configuration: configuration, interrupter: interrupter)
        let backend = try connection.query("SELECT pg_backend_pid()")[0].decode(0, as: Int.self)
        let configuration = self.configuration
        let unit = interrupter.begin(at: .now)
        // Interrupts once the server runs the query (waiting for that state, up to 10 s), so the
        // call interrupted is one in progress, not one that has not sent its query yet.
        let running = Mutex(false)
        let watcher = Thread {
            let administrator = try? Connection(configuration: configuration)
            defer { administrator?.close() }
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                let active = (try? administrator?.query("""
                    SELECT count(*)::int8 FROM pg_stat_activity
                    WHERE pid = \(backend) AND state = 'active' AND query = 'SELECT pg_sleep(30)'
                    """)[0].decode(0, as: Int.self)) == 1
                if active {
                    running.withLock { $0 = true }
                    break
                }
                Thread.sleep(forTimeInterval: 0.005)
            }
            interrupter.interrupt(unit, because: .cancelled)
        }
        watcher.start()
        #expect(throws: PostgresError.self) { try connection.execute("SELECT pg_sleep(30)") }
        #expect(running.withLock { $0 })
        #expect(interrupter.reason == .cancelled)
        #expect(!connection.isHealthy)
        interrupter.end(unit)
    }

    /// libpq closes its socket when it reads that the server went away; an interruption that comes
    /// after that (a watchdog's timeout, a cancelled wait) must not shut down whatever socket the
    /// freed descriptor number went to next. Shown failing when the interrupter held libpq's own
    /// descriptor: the socket given that number was shut.
    @Test func anInterruptionAfterTheConnectionBrokeLeavesAReusedDescriptorAlone() throws {
        let interrupter = ConnectionInterrupter()
        let connection = try Connection(configuration: configuration, interrupter: interrupter)
        let libpqDescriptor = connection.descriptor
        var pair: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { for end in pair { Glibc.close(end) } }
        let backend = try connection.query("SELECT pg_backend_pid() AS pid")[0].decode("pid", as: Int.self)
        let administrator = try Connection(configuration: configuration)
        defer { administrator.close() }
        // Waits (up to 10 s) until the backend has exited.
        #expect(try administrator.query("SELECT pg_terminate_backend(\(backend), 10000) AS gone")[0].decode("gone", as: Bool.self))

        let unit = interrupter.begin(at: .now)
        #expect(throws: PostgresError.self) { try connection.execute("SELECT 1") }
        try #require(connection.descriptor == -1, "libpq kept its socket; nothing to check")

        // Another socket takes the freed number (the lowest free one at or above it).
        let reused = fcntl(pair[0], F_DUPFD_CLOEXEC, libpqDescriptor)
        defer { Glibc.close(reused) }
        try #require(reused == libpqDescriptor, "descriptor \(libpqDescriptor) was taken by another thread meanwhile")

        interrupter.interrupt(unit, because: .cancelled)
        interrupter.end(unit)

        var byte: UInt8 = 42
        #expect(send(reused, &byte, 1, Int32(MSG_NOSIGNAL)) == 1, "the reused descriptor was shut down: errno \(errno)")
        byte = 0
        #expect(recv(pair[1], &byte, 1, Int32(MSG_DONTWAIT)) == 1 && byte == 42)
        connection.close()
    }
}

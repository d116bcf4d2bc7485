@testable import EngageAPI
import HTTPServer
import Runtime
import Testing
import TestSupport

@Suite("HTTPS certificate reloads")
struct CertificateReloaderTests {
    /// Shutdown stops the reloader before the rest of the server and the local PostgreSQL: a
    /// SIGHUP then (a certbot hook during a restart) must not end the process the default way,
    /// which leaves that PostgreSQL running with no one to stop it.
    @Test func aStoppedReloaderLeavesSIGHUPIgnored() async throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let leaf = try authority.issue("server")
        let credentials = try TLSCredentials(certificateFile: leaf.certificateFile, keyFile: leaf.keyFile)
        let reloader = CertificateReloader(credentials: credentials, logger: Logger(label: "test", sink: MemoryLogSink()),
                                           registry: MetricsRegistry())
        // While it listens, the signal is handled (Dispatch's handler).
        #expect(UnixSignals.disposition(of: .sighup) == .handled)
        let running = Task { try await reloader.run() }
        running.cancel()
        try await running.value
        // Ignored, or handled by another test's server listening still: never the default action.
        #expect(UnixSignals.disposition(of: .sighup) != .defaultAction)
    }
}

import Foundation
import Postgres
import Testing
import TestSupport

/// `engage serve` with HTTPS as an operator runs it: certificate and key from the environment,
/// renewed files picked up on SIGHUP while clients stay connected, bad files refused.
@Suite("engage serve: TLS")
struct ServeTLSTests {
    @Test(.timeLimit(.minutes(3)))
    func sighupServesRenewedFilesAndKeepsConnectionsOpen() async throws {
        let workspace = try FaultWorkspace("serve-tls")
        let authority = try TestCertificateAuthority()
        defer { workspace.remove(); authority.remove() }
        let first = try authority.issue("first"), second = try authority.issue("second")
        let live = try authority.live(first)
        let process = try EngageProcess(["serve", "--listen", "127.0.0.1:0", "--projector", "off", "--scheduler", "off", "--pool-size", "4"],
                                        database: try TestPostgres.freshDatabase(),
                                        environment: ["ENGAGE_TLS_CERT": live.certificate, "ENGAGE_TLS_KEY": live.key],
                                        workspace: workspace, name: "serve")
        let port = try await process.listeningPort()
        #expect(process.log.contains("address=https://127.0.0.1:\(port)"))
        #expect(process.log.contains("msg=tls.certificate "))
        #expect(process.log.contains("certificate.sha256=\(first.sha256)"))
        _ = try await process.poll(timeout: .seconds(30), what: "/readyz over HTTPS") { () -> Bool? in
            try await curlHTTPS(port: port, path: "/readyz", caFile: authority.certificateFile).output == "200" ? true : nil
        }

        let kept = try TLSTestClient(port: port, caFile: authority.certificateFile)
        defer { kept.close() }
        let before = try await offPool { _ = try kept.connect(); return try kept.get("/healthz") }
        #expect(before.status == 200)
        #expect(before.handshake.certificate == first.sha256)

        try second.install(certificateFile: live.certificate, keyFile: live.key)
        process.child.signal(SIGHUP)
        _ = try await process.poll(timeout: .seconds(30), what: "the reload to be logged") {
            process.log.contains("msg=tls.reloaded") && process.log.contains("certificate.sha256=\(second.sha256)") ? true : nil
        }
        let fresh = try await offPool { try TLSTestClient(port: port, caFile: authority.certificateFile).get("/healthz") }
        #expect(fresh.status == 200)
        #expect(fresh.handshake.certificate == second.sha256)
        let after = try await offPool { try kept.get("/healthz") }
        #expect(after.status == 200)
        #expect(after.handshake == before.handshake)

        // A renewal that left a broken file: logged, and the renewed pair stays in use.
        try "half a certificate\n".write(toFile: live.certificate, atomically: true, encoding: .utf8)
        process.child.signal(SIGHUP)
        _ = try await process.poll(timeout: .seconds(30), what: "the failed reload to be logged") {
            process.log.contains("msg=tls.reload_failed") ? true : nil
        }
        #expect(process.log.contains("code=tls.certificate_invalid"))
        let still = try await offPool { try TLSTestClient(port: port, caFile: authority.certificateFile).get("/healthz") }
        #expect(still.status == 200)
        #expect(still.handshake.certificate == second.sha256)
        let metrics = try await curlHTTPSBody(port: port, path: "/metrics", caFile: authority.certificateFile)
        let expiry = metrics.split(separator: "\n").first { $0.hasPrefix("engage_tls_certificate_expiry_timestamp_seconds ") }
            .flatMap { Double($0.split(separator: " ")[1]) }
        #expect((expiry ?? 0) > Date().timeIntervalSince1970, "\(metrics)")

        #expect(try await process.terminate() == 0)
    }

    @Test(.timeLimit(.minutes(2)), arguments: [
        (["--tls-cert", "<cert>"], [:], "error: --tls-cert needs --tls-key (or ENGAGE_TLS_KEY)\nusage: engage serve"),
        ([], ["ENGAGE_TLS_KEY": "<key>"], "error: --tls-key needs --tls-cert (or ENGAGE_TLS_CERT)"),
        (["--tls-cert", "<missing>", "--tls-key", "<key>"], [:], "error: --tls-cert: cannot read <missing>: No such file or directory"),
        (["--tls-cert", "<cert>", "--tls-key", "<other-key>"], [:], "error: --tls-key: the key in <other-key> does not belong to the certificate in <cert>"),
    ] as [([String], [String: String], String)])
    func filesThatCannotServeStopTheServerBeforeItStarts(arguments: [String], environment: [String: String], message: String) async throws {
        let workspace = try FaultWorkspace("serve-tls")
        let authority = try TestCertificateAuthority()
        defer { workspace.remove(); authority.remove() }
        let leaf = try authority.issue("server"), other = try authority.issue("other")
        let names = ["<cert>": leaf.certificateFile, "<key>": leaf.keyFile, "<other-key>": other.keyFile, "<missing>": workspace.file("missing.pem")]
        func resolve(_ text: String) -> String {
            names.reduce(text) { text, name in text.replacingOccurrences(of: name.key, with: name.value) }
        }
        let process = try EngageProcess(["serve", "--listen", "127.0.0.1:0"] + arguments.map(resolve), database: try TestPostgres.freshDatabase(),
                                        environment: environment.mapValues(resolve), workspace: workspace, name: "serve")
        #expect(try await process.exitStatus(within: .seconds(30)) == 64)
        #expect(process.log.contains(resolve(message)), "\(process.log)")
        #expect(!process.log.contains("engage.listening"))
    }
}

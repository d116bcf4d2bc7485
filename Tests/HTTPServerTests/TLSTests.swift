import Foundation
import Testing

@testable import HTTPServer
import TestSupport

/// HTTPS: certificates from a CA made in the test, checked by real clients (curl, and python3's
/// ssl module for what curl cannot do: hold a connection across a reload, offer TLS 1.1).
@Suite(.serialized) struct TLSTests {
    static func configuration(_ credentials: TLSCredentials, eventLoop: HTTPServer.Configuration.EventLoop = .poll) -> HTTPServer.Configuration {
        var configuration = testConfiguration(eventLoop)
        configuration.tls = credentials
        return configuration
    }

    @Test(arguments: HTTPServer.Configuration.EventLoop.allCases)
    func curlTrustingTheCAGetsAnswers(eventLoop: HTTPServer.Configuration.EventLoop) async throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let leaf = try authority.issue("server")
        let credentials = try TLSCredentials(certificateFile: leaf.certificateFile, keyFile: leaf.keyFile)
        #expect(credentials.certificate.sha256 == leaf.sha256)
        #expect(credentials.certificate.subject == "CN=server")
        #expect(credentials.certificate.chainLength == 1)
        try await withServer(Self.configuration(credentials, eventLoop: eventLoop)) { server in
            let answer = try await curlHTTPS(port: server.port, path: "/hello/tls", caFile: authority.certificateFile)
            #expect(answer.status == 0, "\(answer.output)")
            #expect(answer.output == "200")
            // Plain HTTP on the HTTPS port gets no answer.
            let plain = try? await offPool { try RawHTTPClient(port: server.port, receiveTimeout: 5).request("GET", "/hello/x") }
            #expect(plain == nil)
        }
    }

    @Test func aClientTrustingAnotherCARefusesTheServer() async throws {
        let authority = try TestCertificateAuthority()
        let stranger = try TestCertificateAuthority(name: "some other CA")
        defer { authority.remove(); stranger.remove() }
        let leaf = try authority.issue("server")
        try await withServer(Self.configuration(try TLSCredentials(certificateFile: leaf.certificateFile, keyFile: leaf.keyFile))) { server in
            let answer = try await curlHTTPS(port: server.port, path: "/hello/x", caFile: stranger.certificateFile)
            #expect(answer.status == 60, "curl: \(answer.output)") // CURLE_PEER_FAILED_VERIFICATION
            #expect(answer.output.contains("unable to get local issuer certificate"), "\(answer.output)")
        }
    }

    @Test func anExpiredCertificateIsRefusedByTheClient() async throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let expired = try authority.issue("expired", from: "20200101000000Z", until: "20200201000000Z")
        let credentials = try TLSCredentials(certificateFile: expired.certificateFile, keyFile: expired.keyFile)
        #expect(credentials.certificate.notAfter == 1_580_515_200) // 2020-02-01T00:00:00Z
        #expect(credentials.certificate.isOutsideValidity(at: Int64(Date().timeIntervalSince1970)))
        try await withServer(Self.configuration(credentials)) { server in
            let answer = try await curlHTTPS(port: server.port, path: "/hello/x", caFile: authority.certificateFile)
            #expect(answer.status == 60, "curl: \(answer.output)")
            #expect(answer.output.contains("certificate has expired"), "\(answer.output)")
        }
    }

    @Test func onlyTLS13And12AreAccepted() async throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let leaf = try authority.issue("server")
        try await withServer(Self.configuration(try TLSCredentials(certificateFile: leaf.certificateFile, keyFile: leaf.keyFile))) { server in
            let port = server.port, ca = authority.certificateFile
            let newest = try await offPool { try TLSTestClient(port: port, caFile: ca).connect() }
            #expect(newest.version == "TLSv1.3")
            let twelve = try await offPool { try TLSTestClient(port: port, caFile: ca, maximumVersion: "1.2").get("/hello/x") }
            #expect(twelve.status == 200)
            #expect(twelve.handshake.version == "TLSv1.2")
            // A client that also offers TLS 1.1 gets 1.2; offering 1.1 alone, it is turned away: the
            // server reads its hello and closes (libmicrohttpd sends no alert), not a local refusal
            // to offer 1.1 (which would say NO_PROTOCOLS_AVAILABLE and never connect).
            let older = try await offPool { try TLSTestClient(port: port, caFile: ca, minimumVersion: "1.1", maximumVersion: "1.2").connect() }
            #expect(older.version == "TLSv1.2")
            let accepted = server.statistics.connectionsAccepted
            let refusal = await #expect(throws: TLSTestClient.Refused.self) {
                try await offPool { try TLSTestClient(port: port, caFile: ca, minimumVersion: "1.1", maximumVersion: "1.1").connect() }
            }
            let description = refusal?.description ?? ""
            #expect(description.contains("EOF") || description.contains("ALERT_PROTOCOL_VERSION"), "\(description)")
            #expect(server.statistics.connectionsAccepted == accepted + 1)
        }
    }

    @Test(arguments: TestCertificateAuthority.KeyKind.allCases)
    func rsaAndECDSAKeysInEveryPEMFormServe(kind: TestCertificateAuthority.KeyKind) async throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let leaf = try authority.issue("server", key: kind)
        let header = try String(contentsOfFile: leaf.keyFile, encoding: .utf8).split(separator: "\n").first.map(String.init)
        #expect(header == ["-----BEGIN PRIVATE KEY-----", "-----BEGIN EC PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----"][
            TestCertificateAuthority.KeyKind.allCases.firstIndex(of: kind)!])
        let credentials = try TLSCredentials(certificateFile: leaf.certificateFile, keyFile: leaf.keyFile)
        try await withServer(Self.configuration(credentials)) { server in
            let port = server.port, ca = authority.certificateFile
            let twelve = try await offPool { try TLSTestClient(port: port, caFile: ca, maximumVersion: "1.2").get("/hello/x") }
            #expect(twelve.status == 200)
            #expect(twelve.handshake.certificate == leaf.sha256)
            let answer = try await curlHTTPS(port: port, path: "/hello/tls", caFile: ca)
            #expect(answer.output == "200")
        }
    }

    @Test func aFullChainFileServesTheLeafFirst() async throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let leaf = try authority.issue("chained", chain: true)
        let credentials = try TLSCredentials(certificateFile: leaf.certificateFile, keyFile: leaf.keyFile)
        #expect(credentials.certificate.chainLength == 2)
        #expect(credentials.certificate.sha256 == leaf.sha256)
        // The CA first, then the server's certificate: refused with the reason.
        let pems = try String(contentsOfFile: leaf.certificateFile, encoding: .utf8).components(separatedBy: "-----END CERTIFICATE-----\n")
        let reversed = authority.directory + "/reversed.pem"
        try (pems[1] + "-----END CERTIFICATE-----\n" + pems[0] + "-----END CERTIFICATE-----\n")
            .write(toFile: reversed, atomically: true, encoding: .utf8)
        #expect(throws: TLSCredentialsError(code: .certificateInvalid,
                                            reason: "\(reversed): the server's certificate must come first, before those that issued it")) {
            try TLSCredentials(certificateFile: reversed, keyFile: leaf.keyFile)
        }
        try await withServer(Self.configuration(credentials)) { server in
            let port = server.port, ca = authority.certificateFile
            let handshake = try await offPool { try TLSTestClient(port: port, caFile: ca).connect() }
            #expect(handshake.certificate == leaf.sha256)
        }
    }

    /// At most 16 certificates, as docs/https.md says: a longer file is refused, saying so (GnuTLS
    /// kept the first 16 and dropped the rest without a word).
    @Test func aChainOfMoreThanSixteenCertificatesIsRefused() throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let leaf = try authority.issue("long", chain: true)
        let others = try (0..<15).map { try String(contentsOfFile: authority.issue("other-\($0)").certificateFile, encoding: .utf8) }
        let chain = try String(contentsOfFile: leaf.certificateFile, encoding: .utf8)
        let sixteen = authority.directory + "/sixteen.pem", seventeen = authority.directory + "/seventeen.pem"
        try (chain + others.dropLast().joined()).write(toFile: sixteen, atomically: true, encoding: .utf8)
        try (chain + others.joined()).write(toFile: seventeen, atomically: true, encoding: .utf8)
        _ = try TLSCredentials(certificateFile: sixteen, keyFile: leaf.keyFile)
        #expect(throws: TLSCredentialsError(code: .certificateInvalid,
                                            reason: "\(seventeen) holds no usable PEM certificate chain: more than 16 certificates")) {
            try TLSCredentials(certificateFile: seventeen, keyFile: leaf.keyFile)
        }
    }

    @Test(arguments: HTTPServer.Configuration.EventLoop.allCases)
    func reloadServesTheNewCertificateWhileOpenConnectionsCarryOn(eventLoop: HTTPServer.Configuration.EventLoop) async throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let first = try authority.issue("first"), second = try authority.issue("second")
        let live = try authority.live(first)
        let credentials = try TLSCredentials(certificateFile: live.certificate, keyFile: live.key)
        try await withServer(Self.configuration(credentials, eventLoop: eventLoop)) { server in
            let port = server.port, ca = authority.certificateFile
            let kept = try TLSTestClient(port: port, caFile: ca)
            defer { kept.close() }
            let before = try await offPool { _ = try kept.connect(); return try kept.get("/hello/before") }
            #expect(before.status == 200)
            #expect(before.handshake.certificate == first.sha256)

            try second.install(certificateFile: live.certificate, keyFile: live.key)
            let reloaded = try credentials.reload()
            #expect(reloaded.sha256 == second.sha256)
            #expect(credentials.certificate == reloaded)

            let fresh = try await offPool { try TLSTestClient(port: port, caFile: ca).get("/hello/x") }
            #expect(fresh.status == 200)
            #expect(fresh.handshake.certificate == second.sha256)
            let curl = try await curlHTTPS(port: port, path: "/hello/x", caFile: ca)
            #expect(curl.output == "200")
            // The open connection still answers, on the certificate it was opened with.
            let after = try await offPool { try kept.get("/hello/after") }
            #expect(after.status == 200)
            #expect(after.handshake == before.handshake)
        }
    }

    @Test func aBadReloadKeepsTheCertificateInUse() async throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let first = try authority.issue("first"), other = try authority.issue("other")
        let live = try authority.live(first)
        let credentials = try TLSCredentials(certificateFile: live.certificate, keyFile: live.key)
        try await withServer(Self.configuration(credentials)) { server in
            // A certificate whose key is another one's (a renewal caught halfway).
            try Data(contentsOf: URL(fileURLWithPath: other.certificateFile)).write(to: URL(fileURLWithPath: live.certificate))
            #expect(throws: TLSCredentialsError(code: .keyMismatch, reason: "the key in \(live.key) does not belong to the certificate in \(live.certificate)")) {
                try credentials.reload()
            }
            try "not a certificate\n".write(toFile: live.certificate, atomically: true, encoding: .utf8)
            let invalid = #expect(throws: TLSCredentialsError.self) { try credentials.reload() }
            #expect(invalid?.code == .certificateInvalid)
            #expect(invalid?.reason.hasPrefix("\(live.certificate) holds no usable PEM certificate chain") == true, "\(String(describing: invalid))")
            try FileManager.default.removeItem(atPath: live.key)
            let missing = #expect(throws: TLSCredentialsError.self) { try credentials.reload() }
            #expect(missing == TLSCredentialsError(code: .keyUnreadable, reason: "cannot read \(live.key): No such file or directory"))
            try first.install(certificateFile: live.certificate, keyFile: live.key)
            try "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".write(toFile: live.key, atomically: true, encoding: .utf8)
            let badKey = #expect(throws: TLSCredentialsError.self) { try credentials.reload() }
            #expect(badKey?.code == .keyInvalid)
            #expect(badKey?.reason.contains("AAAA") == false)

            #expect(credentials.certificate.sha256 == first.sha256)
            let port = server.port, ca = authority.certificateFile
            let handshake = try await offPool { try TLSTestClient(port: port, caFile: ca).connect() }
            #expect(handshake.certificate == first.sha256)
        }
    }

    @Test func credentialsThatCannotServeAreRefusedAtLoad() throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let leaf = try authority.issue("server"), other = try authority.issue("other")
        let missing = authority.directory + "/missing.pem"
        #expect(throws: TLSCredentialsError(code: .certificateUnreadable, reason: "cannot read \(missing): No such file or directory")) {
            try TLSCredentials(certificateFile: missing, keyFile: leaf.keyFile)
        }
        #expect(throws: TLSCredentialsError(code: .keyUnreadable, reason: "cannot read \(missing): No such file or directory")) {
            try TLSCredentials(certificateFile: leaf.certificateFile, keyFile: missing)
        }
        let mismatch = #expect(throws: TLSCredentialsError.self) {
            try TLSCredentials(certificateFile: leaf.certificateFile, keyFile: other.keyFile)
        }
        #expect(mismatch?.code == .keyMismatch)
        // The key file given as the certificate: no certificate in it.
        let swapped = #expect(throws: TLSCredentialsError.self) {
            try TLSCredentials(certificateFile: leaf.keyFile, keyFile: leaf.keyFile)
        }
        #expect(swapped?.code == .certificateInvalid)
    }
}

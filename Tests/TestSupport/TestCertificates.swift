import EmbeddedPostgres
import Foundation

/// A certificate authority of a test's own, made with the openssl command line in a temporary
/// directory, and the server certificates it signs (for 127.0.0.1 and localhost).
public struct TestCertificateAuthority: Sendable {
    public let directory: String
    /// The CA's certificate: what a client trusts with `--cacert`.
    public let certificateFile: String

    public init(name: String = "engage test CA") throws {
        directory = "/tmp/engage-tls-\(getpid())-\(UUID().uuidString.prefix(8).lowercased())"
        certificateFile = directory + "/ca.pem"
        try FileManager.default.createDirectory(atPath: directory + "/issued", withIntermediateDirectories: true)
        try "".write(toFile: directory + "/index.txt", atomically: true, encoding: .utf8)
        try "01\n".write(toFile: directory + "/serial", atomically: true, encoding: .utf8)
        try """
            [ca]
            default_ca = test
            [test]
            database = \(directory)/index.txt
            new_certs_dir = \(directory)/issued
            serial = \(directory)/serial
            default_md = sha256
            policy = any
            unique_subject = no
            [any]
            commonName = supplied
            [server]
            subjectAltName = IP:127.0.0.1,DNS:localhost
            basicConstraints = critical,CA:false
            extendedKeyUsage = serverAuth
            """.write(toFile: directory + "/ca.cnf", atomically: true, encoding: .utf8)
        try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                          "-keyout", directory + "/ca.key", "-out", certificateFile, "-days", "3650", "-subj", "/CN=\(name)"])
    }

    /// How a certificate's private key is made and written.
    public enum KeyKind: Sendable, CaseIterable {
        /// P-256 in PKCS#8 (`BEGIN PRIVATE KEY`), what `openssl req -newkey ec` writes.
        case ecdsaPKCS8
        /// P-256 in SEC1 (`BEGIN EC PRIVATE KEY`).
        case ecdsaSEC1
        /// RSA 2048 in PKCS#1 (`BEGIN RSA PRIVATE KEY`).
        case rsaPKCS1
    }

    /// A server certificate for 127.0.0.1 and localhost with a fresh key, valid for `days` from
    /// now, or between two dates (`YYYYMMDDHHMMSSZ`) when given. `chain` appends the CA's
    /// certificate after the leaf, as a full chain file does.
    public func issue(_ name: String, key kind: KeyKind = .ecdsaPKCS8, days: Int = 30, from start: String? = nil,
                      until end: String? = nil, chain: Bool = false) throws -> TestCertificate {
        let base = directory + "/" + name
        let newKey = kind == .rsaPKCS1 ? ["-newkey", "rsa:2048"] : ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
        try Self.openssl(["req"] + newKey + ["-nodes", "-keyout", base + ".key", "-out", base + ".csr", "-subj", "/CN=\(name)"])
        switch kind {
        case .ecdsaPKCS8: break
        case .ecdsaSEC1: try Self.openssl(["ec", "-in", base + ".key", "-out", base + ".key"])
        case .rsaPKCS1: try Self.openssl(["rsa", "-traditional", "-in", base + ".key", "-out", base + ".key"])
        }
        var validity = ["-days", String(days)]
        if let start, let end { validity = ["-startdate", start, "-enddate", end] }
        try Self.openssl(["ca", "-batch", "-config", directory + "/ca.cnf", "-cert", certificateFile, "-keyfile", directory + "/ca.key",
                          "-in", base + ".csr", "-out", base + ".pem", "-extensions", "server", "-notext"] + validity)
        if chain {
            let leaf = try String(contentsOfFile: base + ".pem", encoding: .utf8)
            let authority = try String(contentsOfFile: certificateFile, encoding: .utf8)
            try (leaf + authority).write(toFile: base + ".pem", atomically: true, encoding: .utf8)
        }
        let fingerprint = try Self.openssl(["x509", "-in", base + ".pem", "-noout", "-fingerprint", "-sha256"])
        guard let hex = fingerprint.split(separator: "=").last else { throw TestCertificateError("no fingerprint in: \(fingerprint)") }
        return TestCertificate(certificateFile: base + ".pem", keyFile: base + ".key",
                               sha256: hex.filter(\.isHexDigit).lowercased())
    }

    /// Installs `certificate` as `live.pem` and `live.key` in the CA's directory, the files a
    /// server is started with and that a renewal later replaces; their paths.
    public func live(_ certificate: TestCertificate) throws -> (certificate: String, key: String) {
        let live = (certificate: directory + "/live.pem", key: directory + "/live.key")
        try certificate.install(certificateFile: live.certificate, keyFile: live.key)
        return live
    }

    public func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    @discardableResult
    static func openssl(_ arguments: [String]) throws -> String {
        let outcome = try ProcessRunner.run(["/usr/bin/openssl"] + arguments)
        guard outcome.status == 0 else {
            throw TestCertificateError("openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(outcome.output)")
        }
        return outcome.output
    }
}

/// A server certificate (PEM) and its key, with the certificate's SHA-256 fingerprint.
public struct TestCertificate: Sendable {
    public let certificateFile: String
    public let keyFile: String
    /// Lowercase hex, as a client computes it from the certificate it was shown.
    public let sha256: String

    /// Copies the pair over `certificateFile` and `keyFile`, as a renewal tool replaces live files.
    public func install(certificateFile target: String, keyFile keyTarget: String) throws {
        for (source, destination) in [(certificateFile, target), (keyFile, keyTarget)] {
            let data = try Data(contentsOf: URL(fileURLWithPath: source))
            try data.write(to: URL(fileURLWithPath: destination), options: .atomic)
        }
    }
}

public struct TestCertificateError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// curl (the command line, OpenSSL underneath) against `https://127.0.0.1:port`: its exit status,
/// and what it printed (`-w` output or its error).
public func curlHTTPS(port: Int, path: String, caFile: String, extra: [String] = []) async throws -> (status: Int32, output: String) {
    try await offPool {
        let outcome = try ProcessRunner.run(["/usr/bin/curl", "-sS", "--max-time", "20", "--cacert", caFile, "-o", "/dev/null",
                                             "-w", "%{http_code}"] + extra + ["https://127.0.0.1:\(port)\(path)"])
        return (outcome.status, outcome.output)
    }
}

/// What curl prints for `https://127.0.0.1:port/path`, trusting `caFile`.
public func curlHTTPSBody(port: Int, path: String, caFile: String) async throws -> String {
    try await offPool {
        let outcome = try ProcessRunner.run(["/usr/bin/curl", "-sS", "--max-time", "20", "--cacert", caFile, "https://127.0.0.1:\(port)\(path)"])
        guard outcome.status == 0 else { throw TestCertificateError("curl \(path) exited \(outcome.status): \(outcome.output)") }
        return outcome.output
    }
}

import CMicroHTTPD
import Synchronization

/// The certificate chain and private key an HTTPS server presents, read from PEM files.
///
/// ``reload()`` reads the same files again and swaps the new pair in for every later handshake;
/// connections already open keep the pair they started with, so nothing is dropped. When the new
/// files are unreadable, malformed or do not belong together, the pair in use stays and the
/// error says why. A server takes the credentials through ``HTTPServer/Configuration/tls``; they
/// must stay alive as long as the server, which keeps a reference.
public final class TLSCredentials: Sendable {
    /// TLS 1.3 and 1.2 only, with forward-secret AEAD ciphers (what iOS App Transport Security
    /// asks for), in the server's order of preference; a GnuTLS priority string.
    public static let priorities = "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
        + "+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:%SERVER_PRECEDENCE"

    /// A `struct CMicroHTTPD_TLS *`: its own lock guards the swap.
    struct Holder: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    public let certificateFile: String
    public let keyFile: String
    let holder: Holder
    /// The certificate in use; also serializes reloads, so that it names the pair last swapped in.
    private let current: Mutex<CertificateSummary>

    /// Reads the files; throws when they cannot serve.
    public init(certificateFile: String, keyFile: String) throws(TLSCredentialsError) {
        guard let pointer = CMicroHTTPD_tls_create() else {
            throw TLSCredentialsError(code: .outOfMemory, reason: "out of memory")
        }
        let holder = Holder(pointer: pointer)
        let summary: CertificateSummary
        do {
            summary = try Self.load(into: holder, certificateFile: certificateFile, keyFile: keyFile)
        } catch {
            CMicroHTTPD_tls_free(pointer)
            throw error
        }
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.holder = holder
        current = Mutex(summary)
    }

    deinit {
        CMicroHTTPD_tls_free(holder.pointer)
    }

    /// The certificate new connections get.
    public var certificate: CertificateSummary {
        current.withLock { $0 }
    }

    /// Reads the files again and serves them from the next handshake on; on error the pair in use stays.
    @discardableResult
    public func reload() throws(TLSCredentialsError) -> CertificateSummary {
        try current.withLock { (current: inout CertificateSummary) throws(TLSCredentialsError) -> CertificateSummary in
            current = try Self.load(into: holder, certificateFile: certificateFile, keyFile: keyFile)
            return current
        }
    }

    private static func load(into holder: Holder, certificateFile: String, keyFile: String) throws(TLSCredentialsError) -> CertificateSummary {
        var info = CMicroHTTPD_CertificateInfo()
        var error = [CChar](repeating: 0, count: 512)
        let status = CMicroHTTPD_tls_load(holder.pointer, certificateFile, keyFile, &info, &error, error.count)
        guard status == 0 else {
            let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw TLSCredentialsError(code: TLSCredentialsError.Code(status), reason: reason)
        }
        let subject = withUnsafeBytes(of: info.subject) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        let digest = withUnsafeBytes(of: info.sha256) { Array($0) }
        return CertificateSummary(subject: subject, notBefore: info.not_before, notAfter: info.not_after,
                                  sha256: digest.map { String($0, radix: 16).leftPadded(to: 2) }.joined(),
                                  chainLength: Int(info.chain_length))
    }
}

/// What a loaded certificate says about itself, for logs and metrics.
public struct CertificateSummary: Sendable, Equatable {
    /// The leaf's subject, e.g. `CN=engage.example.com`.
    public let subject: String
    /// Validity, in seconds since 1970.
    public let notBefore: Int64
    public let notAfter: Int64
    /// SHA-256 of the leaf in DER, lowercase hex (what `openssl x509 -fingerprint -sha256` shows).
    public let sha256: String
    /// Certificates in the chain, the leaf included.
    public let chainLength: Int

    public init(subject: String, notBefore: Int64, notAfter: Int64, sha256: String, chainLength: Int) {
        self.subject = subject
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.sha256 = sha256
        self.chainLength = chainLength
    }

    /// Whether clients would refuse it at `secondsSince1970` as expired or not yet valid.
    public func isOutsideValidity(at secondsSince1970: Int64) -> Bool {
        secondsSince1970 < notBefore || secondsSince1970 > notAfter
    }
}

/// Why certificate and key files were refused; `code` is stable, `reason` names the file and
/// never holds key material.
public struct TLSCredentialsError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case certificateUnreadable = "tls.certificate_unreadable"
        case certificateInvalid = "tls.certificate_invalid"
        case keyUnreadable = "tls.key_unreadable"
        case keyInvalid = "tls.key_invalid"
        case keyMismatch = "tls.key_mismatch"
        case outOfMemory = "tls.out_of_memory"

        init(_ status: Int32) {
            switch status {
            case CMICROHTTPD_TLS_CERTIFICATE_UNREADABLE.rawValue: self = .certificateUnreadable
            case CMICROHTTPD_TLS_CERTIFICATE_INVALID.rawValue: self = .certificateInvalid
            case CMICROHTTPD_TLS_KEY_UNREADABLE.rawValue: self = .keyUnreadable
            case CMICROHTTPD_TLS_KEY_INVALID.rawValue: self = .keyInvalid
            case CMICROHTTPD_TLS_KEY_MISMATCH.rawValue: self = .keyMismatch
            default: self = .outOfMemory
            }
        }
    }

    public let code: Code
    public let reason: String

    public var description: String { reason }
}

private extension String {
    func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}

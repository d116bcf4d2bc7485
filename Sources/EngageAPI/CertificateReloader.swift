import EngageCore
import Glibc
import HTTPServer
import Runtime

/// Reads the HTTPS certificate and key files again on SIGHUP, as certbot's or an operator's
/// renewal asks (`kill -HUP`): new handshakes get the new pair, open connections keep theirs.
/// Files that cannot serve are logged as an error and the pair in use stays.
///
/// SIGHUP is taken over from the moment it is made (before the server listens), and ignored
/// once the reloader stopped, so a reload request never ends the process the default way: not
/// even during shutdown, after this service stopped and before the local PostgreSQL is.
public struct CertificateReloader: Service {
    private let credentials: TLSCredentials
    private let logger: Logger
    private let hangups: AsyncStream<UnixSignal>

    public init(credentials: TLSCredentials, logger: Logger, registry: MetricsRegistry) {
        self.credentials = credentials
        self.logger = logger
        UnixSignals.ignoreForGood(.sighup)
        hangups = UnixSignals.stream([.sighup])
        registry.gauge("engage_tls_certificate_expiry_timestamp_seconds",
                       help: "When the certificate served to new HTTPS connections expires (seconds since 1970).") {
            Double(credentials.certificate.notAfter)
        }
        log("tls.certificate", credentials.certificate)
    }

    public func run() async throws {
        for await _ in hangups {
            do {
                log("tls.reloaded", try credentials.reload())
            } catch {
                logger.error("tls.reload_failed", [
                    "code": error.code.rawValue, "error": error.reason,
                    "certificate.sha256": credentials.certificate.sha256, "hint": "the certificate in use stays",
                ])
            }
        }
    }

    private func log(_ message: String, _ certificate: CertificateSummary) {
        var fields = [
            "certificate.subject": certificate.subject, "certificate.sha256": certificate.sha256,
            "certificate.not_after": Timestamp(microsecondsSinceEpoch: certificate.notAfter * 1_000_000).rfc3339,
            "certificate.chain": String(certificate.chainLength),
            "file.certificate": credentials.certificateFile, "file.key": credentials.keyFile,
        ]
        if certificate.isOutsideValidity(at: Int64(time(nil))) {
            fields["problem"] = "outside its validity: clients will refuse it"
            logger.warning(message, fields)
        } else {
            logger.info(message, fields)
        }
    }
}

import HTTPServer
import Runtime

/// `engage serve --tls-cert FILE --tls-key FILE`: HTTPS, re-read on SIGHUP (docs/https.md).
enum TLSOptions {
    static let certificate = Option<String?>(
        "tls-cert", value: "file", help: "PEM certificate chain (leaf first) to serve HTTPS with, TLS 1.2 and 1.3 only; re-read on SIGHUP.",
        environment: "ENGAGE_TLS_CERT")
    static let key = Option<String?>(
        "tls-key", value: "file", help: "The unencrypted PEM private key of --tls-cert; re-read on SIGHUP.", environment: "ENGAGE_TLS_KEY")

    static let all: [any CommandOption] = [certificate, key]

    /// The credentials the options name, read now; nil when neither is given.
    static func credentials(_ arguments: ParsedArguments) throws(UsageError) -> TLSCredentials? {
        switch (arguments[certificate], arguments[key]) {
        case (nil, nil):
            return nil
        case (let certificateFile?, let keyFile?):
            do {
                return try TLSCredentials(certificateFile: certificateFile, keyFile: keyFile)
            } catch {
                let option = error.code == .certificateUnreadable || error.code == .certificateInvalid ? certificate : key
                throw arguments.usageError(.invalidValue, "\(option.longName): \(error.reason)")
            }
        case (_?, nil):
            throw arguments.usageError(.missingValue, "\(certificate.longName) needs \(key.longName) (or \(key.environment ?? ""))")
        case (nil, _?):
            throw arguments.usageError(.missingValue, "\(key.longName) needs \(certificate.longName) (or \(certificate.environment ?? ""))")
        }
    }
}

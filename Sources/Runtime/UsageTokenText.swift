import Foundation

extension Command {
    /// An unknown option as a message names it: `--database`, never the value written after
    /// `=` (`--database=postgres://engage:s3cret@db/engage` before the subcommand, where it is
    /// not known, carried the password to standard error).
    static func named(_ token: String) -> String {
        String(token.prefix { $0 != "=" })
    }

    /// An unexpected argument (or subcommand) as a message quotes it, without what could be a
    /// secret: a URL's user information (`postgres://…@db/engage`, the connection string given
    /// without `--database`) and anything after `password=` (spaces around `=` too, as libpq
    /// reads key/value pairs).
    static func shown(_ token: String) -> String {
        var text = token
        if let scheme = text.range(of: "://"), let at = text[scheme.upperBound...].lastIndex(of: "@") {
            text.replaceSubrange(scheme.upperBound..<at, with: "…")
        }
        // The first `password` followed by `=`: an earlier one may be a value (`user=password`).
        var searchFrom = text.startIndex
        while let password = text.range(of: "password", options: .caseInsensitive, range: searchFrom..<text.endIndex) {
            let rest = text[password.upperBound...].drop { $0 == " " || $0 == "\t" }
            if rest.first == "=" { return String(text[..<rest.startIndex]) + "=…" }
            searchFrom = password.upperBound
        }
        return text
    }
}

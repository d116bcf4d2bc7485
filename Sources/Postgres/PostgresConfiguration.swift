import CLibPQ

/// Where and how to connect: a libpq connection string, either a URL
/// (`postgresql://user@host:5432/db?sslmode=disable`) or key/value pairs (`host=/run/pg dbname=engage`).
public struct PostgresConfiguration: Sendable, Equatable, CustomStringConvertible {
    public var connectionString: String
    public var applicationName: String
    public var connectTimeoutSeconds: Int
    /// The fewest synchronous standbys that must have an append's commit before it is
    /// acknowledged, whatever the server's `synchronous_standby_names` asks for at that moment
    /// (`StandbyConfirmation`). 0 trusts the setting. A formation's keeper empties the setting
    /// when it gives up on its standby (pg_auto_failover's `wait_primary`), and during a
    /// switchover on a busy machine the old primary has been seen to do so while its standby was
    /// being promoted, acknowledging commits the new primary never got (docs/high-availability.md);
    /// 1 refuses those commits instead, at the cost of ingestion while the primary runs alone.
    public var requiredSynchronousStandbys = 0
    /// Whether engage writes through this connection, so that with several hosts it asks for the
    /// one that takes writes (`connectionDefaults`); false for a read replica's URL, whose hosts
    /// are standbys by design.
    public var writes = true

    /// The values of `requiredSynchronousStandbys` the commands accept (PostgreSQL's own bound on
    /// WAL senders is far above any formation's standbys); the check's texts are made once for each.
    public static let acceptedSynchronousStandbys = 0...16

    /// `connectTimeoutSeconds` bounds each host's attempt (libpq tries the hosts of a multi-host
    /// URL in turn); 2 s is libpq's smallest recommended value, and a failover is noticed sooner.
    public init(connectionString: String, applicationName: String = "engage", connectTimeoutSeconds: Int = 2) {
        self.connectionString = connectionString
        self.applicationName = applicationName
        self.connectTimeoutSeconds = connectTimeoutSeconds
    }

    /// Key/value pairs for a Unix-socket connection to a local cluster.
    public static func unixSocket(directory: String, port: Int, user: String, database: String) -> PostgresConfiguration {
        PostgresConfiguration(connectionString: "host=\(quote(directory)) port=\(port) user=\(quote(user)) dbname=\(quote(database))")
    }

    /// The same server, another database.
    public func withDatabase(_ database: String) -> PostgresConfiguration {
        var copy = self
        copy.connectionString = Self.replacingDatabase(in: connectionString, with: database)
        return copy
    }

    /// The same server and database as another role, without this one's password (it belongs to
    /// its user; a role that needs one puts it in `~/.pgpass` or `PGPASSWORD`), as key/value pairs.
    public func withUser(_ user: String) -> PostgresConfiguration {
        var copy = self
        copy.connectionString = Self.replacingUser(in: connectionString, with: user)
        return copy
    }

    /// libpq settings engage applies unless the connection string sets them: the connect timeout,
    /// the application name, and TCP keepalives that find a server gone without a word (a
    /// machine lost, a network cut) within about 20 s on an idle connection, instead of the
    /// system's two hours (ignored for Unix sockets). For writing with several hosts, the one
    /// that takes writes (`target_session_attrs=read-write`), unless `PGTARGETSESSIONATTRS` says
    /// otherwise: libpq's own default takes the first that answers, which after a failover is
    /// the old primary come back as a standby, and every append would fail there while a new
    /// connection went to it again.
    var connectionDefaults: [(keyword: String, value: String)] {
        let asksForTheWritableHost = writes && namesSeveralHosts && ProcessInfo.processInfo.environment["PGTARGETSESSIONATTRS"] == nil
        return [("connect_timeout", String(connectTimeoutSeconds)), ("application_name", applicationName),
                ("keepalives", "1"), ("keepalives_idle", "10"), ("keepalives_interval", "3"), ("keepalives_count", "3")]
            + (asksForTheWritableHost ? [("target_session_attrs", "read-write")] : [])
    }

    /// True when the connection string lists more than one host (or host address).
    var namesSeveralHosts: Bool {
        Self.parsed(connectionString)?.contains { ($0.keyword == "host" || $0.keyword == "hostaddr") && $0.value.contains(",") } ?? false
    }

    /// The keywords the connection string sets, with their values, as libpq parses it (URL or
    /// key/value pairs, quoting, percent-encoding, a query's keywords included); nil if libpq
    /// cannot parse it.
    static func parsed(_ connectionString: String) -> [(keyword: String, value: String)]? {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &error) else {
            if let error { PQfreemem(error) }
            return nil
        }
        defer { PQconninfoFree(options) }
        var pairs: [(keyword: String, value: String)] = []
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { pairs.append((String(cString: keyword), String(cString: value))) }
            option += 1
        }
        return pairs
    }

    /// True when libpq can read the connection string (a URL or key/value pairs) and every port
    /// it names is a number libpq accepts: what else is wrong with it only connecting can tell.
    public static func isReadable(_ connectionString: String) -> Bool {
        guard let options = parsed(connectionString) else { return false }
        return options.allSatisfy { option in
            option.keyword != "port" || option.value.split(separator: ",", omittingEmptySubsequences: false).allSatisfy { port in
                port.isEmpty || (port.allSatisfy(\.isASCII) && Int(port).map { (1...65_535).contains($0) } == true)
            }
        }
    }

    /// Never prints a password.
    public var description: String { Self.redactingPassword(connectionString) }

    static func quote(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }

    static func isURL(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
    }

    static func replacingDatabase(in connectionString: String, with database: String) -> String {
        if isURL(connectionString) {
            // scheme://authority/database?query
            let schemeEnd = connectionString.range(of: "://")!.upperBound
            let rest = connectionString[schemeEnd...]
            let queryStart = rest.firstIndex(of: "?") ?? rest.endIndex
            let authorityEnd = rest[..<queryStart].firstIndex(of: "/") ?? queryStart
            let encoded = database.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? database
            return String(connectionString[..<authorityEnd]) + "/" + encoded + String(rest[queryStart...])
        }
        // Later keywords win in libpq, so appending overrides any dbname already present.
        return connectionString + " dbname=" + quote(database)
    }

    /// Parsed by libpq itself (URL or key/value pairs, quoting, percent-encoding, a query's
    /// keywords included), then written back as key/value pairs without `user` and `password`,
    /// with the new user last. A string libpq cannot parse is returned with the user appended, for
    /// the connection to report.
    static func replacingUser(in connectionString: String, with user: String) -> String {
        guard let options = parsed(connectionString) else { return connectionString + " user=" + quote(user) }
        return (pairs(options, without: ["user", "password"]) + ["user=" + quote(user)]).joined(separator: " ")
    }

    /// Parsed options written back as `keyword='value'` pairs, those of `keywords` left out.
    static func pairs(_ options: [(keyword: String, value: String)], without keywords: Set<String>) -> [String] {
        options.filter { !keywords.contains($0.keyword) }.map { $0.keyword + "=" + quote($0.value) }
    }

    /// The connection string without its password (key/value pairs as libpq parsed them) and
    /// the password, for a program given the string on its command line, which any local user
    /// can read (`ps`), and the password in `PGPASSWORD`, which only its own user can. Unchanged,
    /// and no password, when it names none or libpq cannot parse it.
    public static func separatingPassword(_ connectionString: String) -> (connectionString: String, password: String?) {
        guard let options = parsed(connectionString), let password = options.last(where: { $0.keyword == "password" })?.value else {
            return (connectionString, nil)
        }
        return (pairs(options, without: ["password"]).joined(separator: " "), password)
    }

    static func redactingPassword(_ connectionString: String) -> String {
        if isURL(connectionString), let schemeEnd = connectionString.range(of: "://") {
            // scheme://[user[:password]@]hosts[/database][?keyword=value&...], where the query
            // may carry the password too (its keywords percent-encoded or not, as libpq reads them).
            var redacted = String(connectionString[..<schemeEnd.upperBound])
            var rest = connectionString[schemeEnd.upperBound...]
            // As libpq reads it: user information ends at an '@' met before any '/'.
            if let at = rest.firstIndex(where: { $0 == "@" || $0 == "/" }), rest[at] == "@" {
                let userInfo = rest[..<at]
                redacted += userInfo.firstIndex(of: ":").map { String(userInfo[..<$0]) + ":***" } ?? String(userInfo)
                rest = rest[at...]
            }
            guard let queryStart = rest.firstIndex(of: "?") else { return redacted + rest }
            let query = rest[rest.index(after: queryStart)...].split(separator: "&", omittingEmptySubsequences: false).map { parameter in
                let keyword = parameter.prefix { $0 != "=" }
                return String(keyword).removingPercentEncoding == "password" ? keyword + "=***" : String(parameter)
            }
            return redacted + rest[...queryStart] + query.joined(separator: "&")
        }
        return redactingKeywordPassword(connectionString)
    }
}

import Foundation

import EngageAPI
import Foundation
import Postgres
import Runtime

/// `engage keys create|list|revoke`.
enum KeysCommand: EngageCommand {
    static let definition = Command(
        name: "keys",
        abstract: "Create, list and revoke API keys.",
        subcommands: [
            Command(name: "create", abstract: "Create a key for an app and print it once; only its hash is stored.",
                    options: CommonOptions.database + CommonOptions.logging + [
                        .init("app", value: "id", help: "The app whose events the key writes or reads."),
                        .init("role", value: "role", help: "ingest (send events), read (reports) or admin (everything).", default: "ingest"),
                        .init("name", value: "text", help: "A label to recognise the key by.", default: ""),
                    ]),
            Command(name: "list", abstract: "List keys (ids, apps, roles; never the keys).",
                    options: CommonOptions.database + CommonOptions.logging + [.init("app", value: "id", help: "Only this app's keys.")]),
            Command(name: "revoke", abstract: "Revoke a key by its id; it stops working within seconds.",
                    options: CommonOptions.database + CommonOptions.logging,
                    arguments: [.init("key-id", help: "The id shown by engage keys list.")]),
        ])

    static func run(_ arguments: ParsedArguments) async throws {
        let usage = definition.usage(path: arguments.commandPath)
        var logger = try CommonOptions.logger(arguments)
        logger.level = max(logger.level, .warning)
        let setup = try DatabaseSetup.open(arguments, logger: logger)
        defer { setup.close() }
        let pool = ConnectionPool(configuration: setup.configuration, size: 1)
        do {
            try await run(arguments, store: KeyStore(pool: pool), usage: usage)
        } catch {
            await pool.close()
            throw error
        }
        await pool.close()
    }

    private static func run(_ arguments: ParsedArguments, store: KeyStore, usage: String) async throws {
        switch arguments.commandPath.last {
        case "create":
            let app = try arguments.required("app")
            guard Self.isValidAppID(app) else {
                throw UsageError(code: .invalidValue, message: "invalid value '\(app)' for option '--app': use 1-64 letters, digits, '.', '_' or '-'", usage: usage)
            }
            let role = try arguments.value("role", default: Role.ingest)
            let issued = try await store.create(app: app, role: role, name: arguments.value("name") ?? "")
            print(issued.secret)
            FileHandle.standardError.write(Data("created \(role.rawValue) key \(issued.key.keyID) for app \(app); it is shown only this once\n".utf8))
        case "list":
            let keys = try await store.list(app: arguments.value("app"))
            let rows = keys.map { [$0.keyID, $0.appID, $0.role.rawValue, $0.createdAt.rfc3339, $0.revokedAt?.rfc3339 ?? "-", $0.name] }
            print(TextTable(header: ["KEY ID", "APP", "ROLE", "CREATED", "REVOKED", "NAME"], rows: rows).render())
        case "revoke":
            guard let keyID = arguments.argument("key-id") else {
                throw UsageError(code: .missingArgument, message: "missing argument <key-id>", usage: usage)
            }
            guard try await store.revoke(keyID: keyID) else {
                throw UsageError(code: .invalidValue, message: "no active key with id '\(keyID)'", usage: usage)
            }
            print("revoked \(keyID)")
        default:
            break
        }
    }

    static func isValidAppID(_ app: String) -> Bool {
        !app.isEmpty && app.utf8.count <= 64 && app.unicodeScalars.allSatisfy {
            ($0.properties.isASCIIHexDigit || ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
             || $0 == "." || $0 == "_" || $0 == "-")
        }
    }
}


/// Columns aligned for a terminal.
struct TextTable {
    var header: [String]
    var rows: [[String]]

    func render() -> String {
        let widths = header.indices.map { column in
            ([header[column]] + rows.map { $0[column] }).map(\.count).max() ?? 0
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                index == cells.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n")
    }
}

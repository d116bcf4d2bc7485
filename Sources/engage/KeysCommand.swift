import EngageAPI
import EngageCore
import Foundation
import Postgres
import Runtime

/// `engage keys create|list|revoke`.
enum KeysCommand {
    static let app = Option<String?>("app", value: "id", help: "The app whose events the key writes or reads.",
                                     validate: CommonOptions.appID)
    static let role = Option("role", value: "role", help: "ingest (send events), read (reports) or admin (everything).", default: Role.ingest)
    static let name = Option("name", value: "text", help: "A label to recognise the key by.", default: "")
    static let listedApp = Option<String?>("app", value: "id", help: "Only this app's keys.", validate: CommonOptions.appID)
    static let keyID = Argument("key-id", help: "The id shown by engage keys list.")

    static let definition = Command(
        name: "keys",
        abstract: "Create, list and revoke API keys.",
        subcommands: [
            Command(name: "create", abstract: "Create a key for an app and print it once; only its hash is stored.",
                    options: CommonOptions.databaseAndLogging + [app, role, name], run: create),
            Command(name: "list", abstract: "List keys (ids, apps, roles; never the keys).",
                    options: CommonOptions.databaseAndLogging + [listedApp], run: list),
            Command(name: "revoke", abstract: "Revoke a key by its id; it stops working within seconds.",
                    options: CommonOptions.databaseAndLogging, arguments: [keyID], run: revoke),
        ])

    static func create(_ arguments: ParsedArguments) async throws {
        let app = try arguments.required(Self.app)
        let role = arguments[Self.role]
        let issued = try await withKeyStore(arguments) { try await $0.create(app: app, role: role, name: arguments[name]) }
        print(issued.secret)
        FileHandle.standardError.write(Data("created \(role.rawValue) key \(issued.key.keyID) for app \(app); it is shown only this once\n".utf8))
    }

    static func list(_ arguments: ParsedArguments) async throws {
        let keys = try await withKeyStore(arguments) { try await $0.list(app: arguments[listedApp]) }
        var table = TextTable(header: ["KEY ID", "APP", "ROLE", "CREATED", "REVOKED", "NAME"])
        for key in keys {
            table.append([key.keyID, key.appID, key.role.rawValue, key.createdAt.rfc3339, key.revokedAt?.rfc3339 ?? "-", key.name])
        }
        print(table.render())
    }

    static func revoke(_ arguments: ParsedArguments) async throws {
        let keyID = try arguments.required(Self.keyID)
        guard try await withKeyStore(arguments, { try await $0.revoke(keyID: keyID) }) else {
            // A refusal once the database was read, not a usage error: exit 1, as README's
            // exit statuses say (a script revoking twice gets no usage line).
            throw KeysCommandError(description: "no active key with id '\(keyID)': unknown, or revoked already")
        }
        print("revoked \(keyID)")
    }

    /// Runs `body` on the key store of the command's database.
    private static func withKeyStore<T: Sendable>(_ arguments: ParsedArguments, _ body: (KeyStore) async throws -> T) async throws -> T {
        try await DatabaseSetup.withPool(arguments, size: 1, logger: CommonOptions.quietLogger(arguments)) { try await body(KeyStore(pool: $0)) }
    }

    @Sendable static func isValidAppID(_ app: String) -> Bool {
        !app.isEmpty && app.utf8.count <= 64 && app.unicodeScalars.allSatisfy {
            ($0.properties.isASCIIHexDigit || ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
             || $0 == "." || $0 == "_" || $0 == "-")
        }
    }
}

extension Role: OptionValue {}

/// A keys command refused after it started (exit 1).
struct KeysCommandError: Error, CustomStringConvertible {
    var description: String
}

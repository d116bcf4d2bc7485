import Foundation
import Postgres
import Testing

extension FaultWorkspace {
    /// Writes the definition of a two-arm draft experiment `id` (full image against adaptive,
    /// hourly) for `engage experiment create --file`, and returns the file's path.
    func experimentDefinition(id: String) throws -> String {
        let file = file("definition.json")
        let definition = #"{"id":"\#(id)","app_id":"app-1","arms":[{"name":"control","strategy":"full","weight":0.5,"control":true},"#
            + #"{"name":"treatment","strategy":"adaptive","weight":0.5}],"primary_metric":"open","schedule":"0 * * * *"}"#
        try Data(definition.utf8).write(to: URL(fileURLWithPath: file))
        return file
    }

    /// Creates that draft experiment on `database` with `engage experiment create`, which must
    /// succeed (exit status 0), and returns its id: `prefix`, a dash and eight hex digits, so that
    /// tests sharing a database do not meet.
    func createdExperiment(prefix: String, on database: PostgresConfiguration,
                           sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        let id = "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
        let file = try experimentDefinition(id: id)
        let created = try await CommandLineOptionsTests.engage(
            ["experiment", "create", "--file", file, "--database", database.connectionString], in: self)
        #expect(created.status == 0, "\(created.output)", sourceLocation: sourceLocation)
        return id
    }
}

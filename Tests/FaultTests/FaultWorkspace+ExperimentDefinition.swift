import Foundation

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
}

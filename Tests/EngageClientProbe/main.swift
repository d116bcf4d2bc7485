import EngageClient
import Foundation

// A stand-in for an app extension, started by the fault tests: it records events into an
// EngageClient queue one at a time and prints each id once `record` returned (the event is then
// on disk). With `send` it also sends every ten events. It runs until it is killed.
//
//     EngageClientProbe CONTAINER ENDPOINT KEY send|hold

let arguments = CommandLine.arguments
guard arguments.count == 5, let endpoint = URL(string: arguments[2]), ["send", "hold"].contains(arguments[4]) else {
    FileHandle.standardError.write(Data("usage: EngageClientProbe CONTAINER ENDPOINT KEY send|hold\n".utf8))
    exit(64)
}
let sends = arguments[4] == "send"
let client = try EngageClient(configuration: EngageClient.Configuration(
    endpoint: endpoint, ingestKey: arguments[3], containerDirectory: URL(fileURLWithPath: arguments[1]),
    deviceID: "probe-device", batchSize: 5, requestTimeout: .seconds(5), claimLease: .seconds(5),
    retry: RetryPolicy(initialDelay: .milliseconds(50), maxDelay: .milliseconds(200))))

var recorded = 0
while true {
    let id = try client.recordDisplayed(notificationID: "probe-\(recorded)", category: "new_photo",
                                        presentation: .rich, attachmentKind: .image)
    // One write(2) per line: the test reads the file while this process runs.
    FileHandle.standardOutput.write(Data("recorded \(id.uuidString.lowercased())\n".utf8))
    recorded += 1
    if sends && recorded.isMultiple(of: 10) {
        await client.flush(budget: .seconds(5))
    } else if !sends && recorded >= 2_000 {
        try await Task.sleep(for: .seconds(3_600))
    }
}

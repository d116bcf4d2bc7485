import EngageClient
import Foundation

// A stand-in for an app extension, started by the fault tests. It prints its installation id,
// then records events into an EngageClient queue one at a time and prints each id once `record`
// returned (the event is then on disk), and every event the client drops. With `send` it also
// sends every ten events. Without COUNT it runs until it is killed; with COUNT it stops after
// that many, sends what waits (`send`), prints the ids still queued and the drop counts, and exits.
// With `fill` it records COUNT events, fills the container's file system to the last byte
// (CONTAINER/filler), then records one event larger than all of them together.
//
//     EngageClientProbe CONTAINER ENDPOINT KEY send|hold|fill [COUNT]

let arguments = CommandLine.arguments
guard (5...6).contains(arguments.count), let endpoint = URL(string: arguments[2]), ["send", "hold", "fill"].contains(arguments[4]),
      arguments.count == 5 || Int(arguments[5]) != nil
else {
    FileHandle.standardError.write(Data("usage: EngageClientProbe CONTAINER ENDPOINT KEY send|hold|fill [COUNT]\n".utf8))
    exit(64)
}
let sends = arguments[4] == "send"
let fills = arguments[4] == "fill"
let count = arguments.count == 6 ? Int(arguments[5]) : nil
let container = URL(fileURLWithPath: arguments[1])

/// One write(2) per line: the test reads the output while this process runs.
@Sendable func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let installation = try InstallationID.readOrCreate(in: container)
say("installation \(installation)")
let client = try EngageClient(configuration: EngageClient.Configuration(
    endpoint: endpoint, ingestKey: arguments[3], containerDirectory: container,
    deviceID: installation, batchSize: 5, requestTimeout: .seconds(5), claimLease: .seconds(5),
    retry: RetryPolicy(initialDelay: .milliseconds(50), maxDelay: .milliseconds(200)))) { dropped in
    let reason = switch dropped.reason {
    case .overflow: "overflow"
    case .diskFull: "disk_full"
    case .expired: "expired"
    case .unreadable: "unreadable"
    case .rejected: "rejected"
    case .refused: "refused"
    }
    for id in dropped.eventIDs { say("dropped \(reason) \(id)") }
}

let pid = ProcessInfo.processInfo.processIdentifier
var recorded = 0
while count.map({ recorded < $0 }) ?? true {
    do {
        let id = try client.recordDisplayed(notificationID: "probe-\(pid)-\(recorded)", category: "new_photo",
                                            presentation: .rich, attachmentKind: .image)
        say("recorded \(id.uuidString.lowercased())")
    } catch {
        say("failed \(String(reflecting: error))")
    }
    recorded += 1
    if sends && recorded.isMultiple(of: 10) {
        await client.flush(budget: .seconds(5))
    } else if !sends && count == nil && recorded >= 2_000 {
        try await Task.sleep(for: .seconds(3_600))
    }
}
if fills {
    let filler = open(container.appendingPathComponent("filler").path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let block = [UInt8](repeating: 0, count: 4_096)
    // Whole blocks, then single bytes, until the file system has none left.
    while write(filler, block, block.count) > 0 {}
    while write(filler, block, 1) > 0 {}
    close(filler)
    do {
        let id = try client.recordDisplayed(notificationID: "probe-\(pid)-large", category: "new_photo", presentation: .rich,
                                            attachmentKind: .image, properties: ["padding": .string(String(repeating: "x", count: 65_536))])
        say("recorded \(id.uuidString.lowercased())")
    } catch {
        say("failed \(String(reflecting: error))")
    }
}
if sends {
    // Waiting events go; segments another process claimed are that process's to send.
    var rounds = 0
    while client.pending.events > 0 && rounds < 100 {
        await client.flush(budget: .seconds(5))
        rounds += 1
    }
}
for id in client.pendingEventIDs() { say("queued \(id)") }
let counts = client.dropCounts
say("counts disk_full=\(counts.diskFull) overflow=\(counts.overflow) expired=\(counts.expired) unreadable=\(counts.unreadable)")
say("done")

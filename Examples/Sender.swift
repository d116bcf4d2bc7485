// The server that sends the pushes (a Swift server on Linux or macOS; any language works the
// same way over HTTP): it asks engage for the arms of a whole send at once, puts each device's
// assignment into that device's payload, and records its `sent` event with the same arm.
// Not built by SwiftPM: Examples/ is outside every target directory.
import EngageClient
import Foundation

struct Recipient {
    var deviceID: String      // the installation id the app reports (InstallationID)
    var deviceToken: String   // the APNs token, which engage never sees
}

func sendNewPhoto(to recipients: [Recipient], photo: URL, photoBytes: Int, thumbnail: URL, thumbnailBytes: Int, sender: EngageClient,
                  push: (String, [String: Any]) async throws -> String) async throws {
    // One request per 1,000 devices; a device in no experiment has no entry.
    let arms = try await sender.assignments(forDevices: recipients.map(\.deviceID), category: "new_photo")
    for recipient in recipients {
        let assignment = arms[recipient.deviceID]?.first
        let notificationID = UUID().uuidString.lowercased()
        let media = [PushPayload.Media(variant: "original", url: photo, kind: .image, bytes: photoBytes),
                     PushPayload.Media(variant: "thumbnail", url: thumbnail, kind: .image, bytes: thumbnailBytes)]
        let engage = PushPayload(notificationID: notificationID, assignment: assignment, strategy: .full, media: media)
        let payload: [String: Any] = [
            "aps": ["alert": ["title": "New photo"], "mutable-content": 1, "category": "new_photo"],
            PushPayload.key: try JSONSerialization.jsonObject(with: Data(engage.json.utf8)),
        ]
        _ = try await push(recipient.deviceToken, payload)
        // The same arm and strategy the payload carries.
        let offered = [MediaVariant(variant: "original", kind: .image, format: .jpeg, bytes: photoBytes),
                       MediaVariant(variant: "thumbnail", kind: .image, format: .jpeg, bytes: thumbnailBytes)]
        try sender.recordSent(notificationID: notificationID, category: "new_photo", media: offered,
                              strategy: assignment?.attachmentStrategy ?? .full, experiment: assignment?.experimentArm,
                              deviceID: recipient.deviceID)
    }
    await sender.flush(budget: .seconds(10))
}

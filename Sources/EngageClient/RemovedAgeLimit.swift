import Foundation

/// The age limit earlier versions applied on the device (`maxEventAge`), kept so that an app
/// setting it still builds when it updates the library: it is ignored, since a device clock set a
/// month ahead made the client drop events the server accepts. The server judges age by its own
/// clock and rejects what is too old (`DroppedEvents.Reason.rejected`).
extension EngageClient.Configuration {
    @available(*, deprecated, message: "ignored: the server judges an event's age by its own clock")
    public init(endpoint: URL, ingestKey: String, containerDirectory: URL, deviceID: String,
                batchSize: Int = 50, flushInterval: Duration = .seconds(10), maxQueueBytes: Int = 5 * 1024 * 1024,
                sendBudget: Duration = .seconds(2), requestTimeout: Duration = .seconds(30),
                claimLease: Duration = .seconds(60), retry: RetryPolicy = RetryPolicy(), gzip: Bool = true,
                maxEventAge: Duration,
                fileProtection: QueueFileProtection = .completeUntilFirstUserAuthentication) {
        self.init(endpoint: endpoint, ingestKey: ingestKey, containerDirectory: containerDirectory, deviceID: deviceID,
                  batchSize: batchSize, flushInterval: flushInterval, maxQueueBytes: maxQueueBytes, sendBudget: sendBudget,
                  requestTimeout: requestTimeout, claimLease: claimLease, retry: retry, gzip: gzip,
                  fileProtection: fileProtection)
    }

    /// Reads as the limit earlier versions applied by default; setting it changes nothing.
    @available(*, deprecated, message: "ignored: the server judges an event's age by its own clock")
    public var maxEventAge: Duration {
        get { .seconds(30 * 86_400 - 3600) }
        set {}
    }
}

/// When the projector may read the log again (`Projector.Configuration.readInterval`): a read that
/// found fewer events than a batch reached the log's end, and the next waits for the interval
/// from its start; after a full batch the projector is behind and reads on at once.
struct ReadPacing: Sendable {
    let interval: Duration
    let batchSize: Int

    func nextRead(afterReadStartedAt started: ContinuousClock.Instant, eventsRead: Int) -> ContinuousClock.Instant {
        eventsRead < batchSize ? started + interval : started
    }
}

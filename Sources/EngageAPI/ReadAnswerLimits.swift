/// How long a route that only reads waits for the database before it answers 503 with
/// `Retry-After`. A database that answers nothing at all (a frozen host, a network that drops
/// everything) would otherwise hold the request, and the pooled connection it reads on, until
/// the host came back, and a few such requests hold every pooled connection, so every later
/// request waits for one too (`FrozenDatabaseReadTests`). Past the limit the read is cancelled,
/// which closes its connection (`ConnectionPool.withConnection`), so the slot is free at once.
/// Each limit is far above what the read takes when the database answers.
enum ReadAnswerLimits {
    /// `GET` and `POST /v1/assignments`: apps wait for these, as long as for a key lookup.
    static let assignments = Duration.seconds(5)
    /// `/v1/report` and the experiment routes that read: milliseconds when the database answers.
    static let reads = Duration.seconds(10)
    /// `/v1/simulate` replays an experiment's events from the log: seconds for a large one.
    static let replay = Duration.seconds(60)
}

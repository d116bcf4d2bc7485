import Postgres

extension EventStore {
    /// Appends a batch of which PostgreSQL may refuse some rows for their values (SQLSTATE class
    /// 22, `Committer.refusesForItsValues`), storing every other row: the refused ones come back
    /// as `.refused` with their SQLSTATE, the rest as `append` reports them. Any other failure,
    /// a constraint's refusal (class 23) included, fails the append.
    ///
    /// A refused batch is halved, and each half appended on its own (in its own transaction),
    /// down to single rows: a refusal is deterministic (the same bytes fail the same way), so the
    /// row that fails alone is the one at fault, and one bad row among n costs about 2·log2(n)
    /// appends. The batch is then no longer all or nothing: halves stored before a later one
    /// fails for another reason (a broken connection) stay stored, and the caller's retry with
    /// the same ids finds them as duplicates, as after any commit whose answer was lost.
    ///
    /// - Parameter knownRefused: the whole batch was just refused (the committer's own attempt):
    ///   start with its halves rather than try it whole again.
    public static func appendIsolatingRefusedRows(_ batch: PreparedBatch, using connection: ReusableConnection,
                                                  knownRefused: PostgresError? = nil) throws -> AppendResult {
        var outcomes = [AppendResult.Outcome?](repeating: nil, count: batch.itemCount)
        try appendRows(Array(0..<batch.rowCount), of: batch, knownRefused: knownRefused, using: connection, into: &outcomes)
        return AppendResult(outcomes: outcomes.map { $0 ?? .refused(sqlState: "") })
    }

    private static func appendRows(_ rows: [Int], of batch: PreparedBatch, knownRefused: PostgresError?,
                                   using connection: ReusableConnection, into outcomes: inout [AppendResult.Outcome?]) throws {
        guard !rows.isEmpty else { return }
        var refusal = knownRefused
        if refusal == nil {
            do {
                // Each item with its row, repeats included: `append` answers it as in the batch.
                let (part, items) = batch.keepingRows(rows)
                let result = try append([part], using: connection)[0]
                for (partItem, item) in items.enumerated() { outcomes[item] = result.outcomes[partItem] }
                return
            } catch let error as PostgresError where Committer.refusesForItsValues(error) {
                refusal = error
            }
        }
        guard rows.count > 1 else {
            // The row, and every item repeating its id, refused the same way.
            for item in batch.items(ofRow: rows[0]) { outcomes[item] = .refused(sqlState: refusal?.sqlState ?? "") }
            return
        }
        let middle = rows.count / 2
        try appendRows(Array(rows[..<middle]), of: batch, knownRefused: nil, using: connection, into: &outcomes)
        try appendRows(Array(rows[middle...]), of: batch, knownRefused: nil, using: connection, into: &outcomes)
    }
}

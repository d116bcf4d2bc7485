import Postgres

/// A way to make PostgreSQL refuse a row that validation accepts, as a value validation misses
/// would: a CHECK constraint, added to one test database's `events` table only, that refuses the
/// events of one category (SQLSTATE 23514, check_violation, class 23). The category is an
/// ordinary one to validation; the table refuses it on both append paths (the COPY and the
/// careful INSERT), as it would refuse any row failing a constraint.
public enum RefusingConstraint {
    /// The category the constraint refuses.
    public static let category = "refused-by-test"
    public static let sqlState = "23514"

    /// Adds the constraint to `database`'s `events` (and so to each of its partitions).
    public static func add(to database: PostgresConfiguration) throws {
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        try connection.execute("ALTER TABLE events ADD CONSTRAINT test_refused_category CHECK (category <> 'refused-by-test')")
    }
}

import Postgres

/// Ways to make PostgreSQL refuse a row that validation accepts, on one test database's `events`
/// only; the category they refuse is an ordinary one to validation, and both append paths (the
/// COPY and the careful INSERT) meet them.
public enum RefusingConstraint {
    /// The category refused.
    public static let category = "refused-by-test"
    /// What `add` raises: numeric_value_out_of_range, as a value validation misses would.
    public static let sqlState = "22003"
    /// What `addCheck` raises: check_violation, a rule of the schema.
    public static let checkSQLState = "23514"

    /// A row trigger on `database`'s `events` (and so on each partition, present and attached
    /// later) that refuses the category's events for their values: SQLSTATE 22003, class 22.
    public static func add(to database: PostgresConfiguration) throws {
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        try connection.execute("""
            CREATE FUNCTION test_refuse_category() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.category = 'refused-by-test' THEN
                    RAISE EXCEPTION 'refused by the test' USING ERRCODE = '22003';
                END IF;
                RETURN NEW;
            END $$
            """)
        try connection.execute(
            "CREATE TRIGGER test_refused_category BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION test_refuse_category()")
    }

    /// A CHECK constraint on `database`'s `events` that refuses the category's events: SQLSTATE
    /// 23514, class 23, as an operator's constraint or another version's schema would.
    public static func addCheck(to database: PostgresConfiguration) throws {
        let connection = try Connection(configuration: database)
        defer { connection.close() }
        try connection.execute("ALTER TABLE events ADD CONSTRAINT test_refused_category CHECK (category <> 'refused-by-test')")
    }
}

import Postgres
import TestSupport

/// What the partition maintenance tests start from.
enum PartitionMaintenanceFixtures {
    /// A fresh database without the partitions after this week's, so that a run of maintenance
    /// has one to make and says so; and a pool of `size` on it.
    static func databaseWithAPartitionToMake(poolSize size: Int) async throws -> (PostgresConfiguration, ConnectionPool) {
        let database = try TestPostgres.freshDatabase()
        let pool = ConnectionPool(configuration: database, size: size)
        try await pool.withConnection { connection in
            _ = try connection.execute("""
                DO $$ DECLARE p text; BEGIN
                    FOR p IN SELECT name FROM event_partitions WHERE lower > now() LOOP EXECUTE format('DROP TABLE %I', p); END LOOP;
                END $$
                """)
        }
        return (database, pool)
    }
}

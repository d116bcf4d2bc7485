import Postgres

/// A login role that may read and write every table of the database's public schema and nothing
/// more: without `pg_read_all_stats` it cannot see the standbys' positions, as a role an
/// operator forgot to grant it.
public enum UnprivilegedRole {
    public static func create(_ role: String, on admin: Connection) throws {
        try admin.execute("CREATE ROLE \(identifier: role) LOGIN")
        try admin.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO \(identifier: role)")
        try admin.execute("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO \(identifier: role)")
        try admin.execute("GRANT ALL ON SCHEMA public TO \(identifier: role)")
    }
}

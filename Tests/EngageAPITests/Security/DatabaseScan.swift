import Postgres
import TestSupport

extension TestServer {
    /// The tables of the database (every base table of the public schema) with a row whose text
    /// form contains `text`: the whole row as PostgreSQL prints it, jsonb and arrays included.
    func tablesContaining(_ text: String) async throws -> [String] {
        let tables = try await pool.withConnection { connection in
            try connection.query("""
                SELECT table_name::text FROM information_schema.tables
                WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1
                """).rows.map { try $0.decode(0, as: String.self) }
        }
        var found: [String] = []
        for table in tables {
            let rows = try await count("SELECT count(*) FROM \(identifier: table) t WHERE strpos(t::text, \(text)) > 0")
            if rows > 0 { found.append(table) }
        }
        return found
    }
}

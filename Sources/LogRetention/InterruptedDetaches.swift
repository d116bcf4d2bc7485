import Postgres
import Runtime

/// What a prune killed between detaching a week of the log and dropping it leaves behind: the
/// week still pending detach, or detached and not dropped. Its events were archived (when asked)
/// and their ids deleted before the detach began, so they are on their way out either way.
/// Finished by the next prune, and by a restore before it loads anything: the leftover table
/// keeps the week's name, and the restore could make no partition for the week's events.
enum InterruptedDetaches {
    /// Finishes a detach a crash cut short, and drops a detached week that was not dropped yet.
    /// Returns how many weeks it finished or dropped. `beforeChange` runs before the first of either.
    static func finish(beforeChange: () throws -> Void, logger: Logger, on connection: Connection) throws -> Int {
        let pending = try connection.query("""
            SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'events'::regclass AND i.inhdetachpending
            """).rows.map { try $0.decode(0, as: String.self) }
        if !pending.isEmpty { try beforeChange() }
        for name in pending {
            try connection.execute("ALTER TABLE events DETACH PARTITION \(identifier: name) FINALIZE")
        }
        let detached = try connection.query("""
            SELECT c.relname::text FROM pg_class c
            WHERE c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'events'::regclass)
              AND c.relkind = 'r' AND c.relname ~ '^events_(legacy|[0-9]{4}_[0-9]{2}_[0-9]{2}(_[0-9]{6})?)$'
              AND NOT c.relispartition
            """).rows.map { try $0.decode(0, as: String.self) }
        if !detached.isEmpty { try beforeChange() }
        for name in detached {
            logger.notice("log.detached-partition-dropped", ["partition": name])
            try connection.execute("DROP TABLE \(identifier: name)")
        }
        return Set(pending + detached).count
    }
}

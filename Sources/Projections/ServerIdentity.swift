import Postgres

/// Which PostgreSQL server a connection talks to: its address and when its postmaster started.
///
/// The projector reads its next batch on one pooled connection while it writes the current one
/// on another, and the pool reconnects a broken connection to whichever host of a multi-host
/// URL answers: across a failover the two can be different servers. A promoted standby lacks
/// what the old primary committed last (commits its standbys never confirmed) and may give
/// those transaction ids to other events, so a batch read on the old primary must not be folded
/// on the new one. The check and fence of the checkpoint cannot tell (the new primary holds the
/// same checkpoint and the same tables); this can, for one small query a batch.
struct ServerIdentity: Sendable, Equatable {
    let text: String

    static func read(on connection: Connection) throws -> ServerIdentity {
        ServerIdentity(text: try connection.query("""
            SELECT pg_postmaster_start_time()::text || ' ' || coalesce(host(inet_server_addr()), 'local') || ':'
                   || coalesce(inet_server_port()::text, current_setting('port'))
            """)[0].decode(0, as: String.self))
    }
}

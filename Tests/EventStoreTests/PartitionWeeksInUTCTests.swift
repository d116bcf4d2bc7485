import EventStore
import Postgres
import Testing
import TestSupport

/// Migration 024: a week's partition ends at the next Monday midnight UTC whatever the session's
/// time zone, and the log recovers from partitions an earlier version made an hour short or long
/// across a change of summer time (every append of the hour, or of every later week, failed).
@Suite("Partitions of UTC weeks")
struct PartitionWeeksInUTCTests {
    /// The partitions of the log that take `instant` (exactly one where the log has no gap).
    static func partitions(taking instant: String, _ connection: Connection) throws -> [String] {
        try connection.query("""
            SELECT name FROM event_partitions WHERE lower <= \(instant)::timestamptz AND \(instant)::timestamptz < upper ORDER BY name
            """).rows.map { try $0.decode(0) }
    }

    static func bounds(_ name: String, _ connection: Connection) throws -> String {
        let row = try connection.query("""
            SELECT to_char(lower AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') || ' to ' || to_char(upper AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI')
            FROM event_partitions WHERE name = \(name)
            """)
        return try row[0].decode(0)
    }

    /// Berlin moves its clocks on 2027-03-28 and 2027-10-31: each week ends on a Monday midnight UTC.
    @Test func aWeekHoldingAChangeOfSummerTimeEndsOnMondayMidnightUTC() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        try connection.execute("SET TIME ZONE 'Europe/Berlin'")
        for day in ["2027-03-24", "2027-10-27"] {
            #expect(try connection.query("SELECT engage_ensure_event_partition(\(day)::date)")[0].decode(0, as: Bool.self))
        }
        #expect(try Self.bounds("events_2027_03_22", connection) == "2027-03-22 00:00 to 2027-03-29 00:00")
        #expect(try Self.bounds("events_2027_10_25", connection) == "2027-10-25 00:00 to 2027-11-01 00:00")
    }

    /// Partitions an earlier version made in that time zone: the hour left between two weeks gets
    /// a partition of its own, and a week that the one before still reaches into starts where it
    /// ends. Appends of every hour then find a partition, each exactly one.
    @Test func theHourAnEarlierVersionLeftOrTookIsMendedByTheNextCall() throws {
        let connection = try Connection(configuration: try TestPostgres.freshDatabase())
        for (name, from, to) in [("events_2027_03_22", "2027-03-22 00:00+00", "2027-03-28 23:00+00"),
                                 ("events_2027_03_29", "2027-03-29 00:00+00", "2027-04-05 00:00+00"),
                                 ("events_2027_10_25", "2027-10-25 00:00+00", "2027-11-01 01:00+00")] {
            try connection.execute(SQL(unsafeSQL: "CREATE TABLE \(name) (LIKE events INCLUDING DEFAULTS INCLUDING STORAGE)"))
            try connection.execute(SQL(unsafeSQL: "ALTER TABLE events ATTACH PARTITION \(name) FOR VALUES FROM ('\(from)') TO ('\(to)')"))
        }
        #expect(try Self.partitions(taking: "2027-03-28 23:30+00", connection).isEmpty)
        for day in ["2027-03-28", "2027-11-01"] {
            #expect(try connection.query("SELECT engage_ensure_event_partition(\(day)::date)")[0].decode(0, as: Bool.self), "\(day)")
        }
        #expect(try Self.bounds("events_2027_03_28_230000", connection) == "2027-03-28 23:00 to 2027-03-29 00:00")
        #expect(try Self.bounds("events_2027_11_01", connection) == "2027-11-01 01:00 to 2027-11-08 00:00")
        for instant in ["2027-03-28 22:59+00", "2027-03-28 23:30+00", "2027-03-29 00:00+00",
                        "2027-11-01 00:30+00", "2027-11-01 01:00+00", "2027-11-07 23:59+00"] {
            #expect(try Self.partitions(taking: instant, connection).count == 1, "\(instant)")
        }
        // Covered now: nothing more to make.
        #expect(try !connection.query("SELECT engage_ensure_event_partition('2027-03-28'::date)")[0].decode(0, as: Bool.self))
    }
}

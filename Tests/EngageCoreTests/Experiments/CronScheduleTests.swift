import Testing
@testable import EngageCore

private func at(_ text: String) -> Timestamp { Timestamp(rfc3339: text)! }

@Suite struct CronScheduleTests {
    @Test func everyFifteenMinutes() throws {
        let cron = try CronSchedule("*/15 * * * *")
        #expect(cron.next(after: at("2026-03-10T10:07:30Z")) == at("2026-03-10T10:15:00Z"))
        #expect(cron.next(after: at("2026-03-10T10:15:00Z")) == at("2026-03-10T10:30:00Z"))
        #expect(cron.next(after: at("2026-03-10T23:45:00Z")) == at("2026-03-11T00:00:00Z"))
        #expect(cron.previous(atOrBefore: at("2026-03-10T10:07:30Z")) == at("2026-03-10T10:00:00Z"))
        #expect(cron.previous(atOrBefore: at("2026-03-10T10:15:00Z")) == at("2026-03-10T10:15:00Z"))
        #expect(cron.previous(atOrBefore: at("2026-03-10T10:14:59.999999Z")) == at("2026-03-10T10:00:00Z"))
    }

    @Test func hourlyAtFive() throws {
        let cron = try CronSchedule("5 * * * *")
        #expect(cron.next(after: at("2026-03-10T10:04:59Z")) == at("2026-03-10T10:05:00Z"))
        #expect(cron.next(after: at("2026-03-10T10:05:00Z")) == at("2026-03-10T11:05:00Z"))
        #expect(cron.next(after: at("2026-12-31T23:30:00Z")) == at("2027-01-01T00:05:00Z"))
        #expect(cron.previous(atOrBefore: at("2026-03-10T10:04:00Z")) == at("2026-03-10T09:05:00Z"))
        #expect(cron.previous(atOrBefore: at("2026-03-01T00:00:00Z")) == at("2026-02-28T23:05:00Z"))
    }

    @Test func weekdaysAtNine() throws {
        let cron = try CronSchedule("0 9 * * mon-fri")
        let numeric = try CronSchedule("0 9 * * 1-5")
        #expect(cron.description == "0 9 * * mon-fri")
        var time = at("2026-03-01T00:00:00Z")
        for _ in 0..<10 {
            #expect(cron.next(after: time) == numeric.next(after: time))
            time = cron.next(after: time)!
        }
        // 2026-03-13 is a Friday.
        #expect(cron.next(after: at("2026-03-13T09:00:00Z")) == at("2026-03-16T09:00:00Z"))
        #expect(cron.next(after: at("2026-03-10T08:59:00Z")) == at("2026-03-10T09:00:00Z"))
        #expect(cron.previous(atOrBefore: at("2026-03-15T12:00:00Z")) == at("2026-03-13T09:00:00Z"))
        // Sunday as 0 and as 7.
        let sundays = try CronSchedule("0 0 * * 7")
        #expect(sundays.next(after: at("2026-03-13T00:00:00Z")) == at("2026-03-15T00:00:00Z"))
        #expect(sundays.next(after: at("2026-03-13T00:00:00Z")) == (try CronSchedule("0 0 * * SUN")).next(after: at("2026-03-13T00:00:00Z")))
    }

    @Test func monthBoundaries() throws {
        let first = try CronSchedule("0 0 1 * *")
        #expect(first.next(after: at("2026-01-31T12:00:00Z")) == at("2026-02-01T00:00:00Z"))
        #expect(first.previous(atOrBefore: at("2026-01-31T12:00:00Z")) == at("2026-01-01T00:00:00Z"))
        // The 31st skips months without one.
        let thirtyFirst = try CronSchedule("0 12 31 * *")
        #expect(thirtyFirst.next(after: at("2026-03-31T12:00:00Z")) == at("2026-05-31T12:00:00Z"))
        #expect(thirtyFirst.previous(atOrBefore: at("2026-07-30T00:00:00Z")) == at("2026-05-31T12:00:00Z"))
        let quarterly = try CronSchedule("30 6 1 jan,apr,jul,oct *")
        #expect(quarterly.next(after: at("2026-04-01T06:30:00Z")) == at("2026-07-01T06:30:00Z"))
        let ranged = try CronSchedule("10-40/15 8-9 * * *")
        #expect(ranged.next(after: at("2026-03-10T08:40:00Z")) == at("2026-03-10T09:10:00Z"))
        #expect(ranged.next(after: at("2026-03-10T09:40:00Z")) == at("2026-03-11T08:10:00Z"))
    }

    @Test func leapDay() throws {
        let cron = try CronSchedule("0 0 29 2 *")
        #expect(cron.next(after: at("2025-03-01T00:00:00Z")) == at("2028-02-29T00:00:00Z"))
        #expect(cron.previous(atOrBefore: at("2028-02-28T23:59:00Z")) == at("2024-02-29T00:00:00Z"))
        // 2100 is not a leap year: eight years pass.
        #expect(cron.next(after: at("2096-03-01T00:00:00Z")) == at("2104-02-29T00:00:00Z"))
        // A date that never exists.
        #expect(try CronSchedule("0 0 30 2 *").next(after: at("2026-01-01T00:00:00Z")) == nil)
        #expect(try CronSchedule("0 0 31 4,6 *").previous(atOrBefore: at("2026-01-01T00:00:00Z")) == nil)
    }

    @Test func restrictedDayFieldsCombineWithOr() throws {
        // Both day fields restricted: the 15th OR any Friday (2026-03-15 is a Sunday).
        let either = try CronSchedule("0 9 15 * fri")
        #expect(either.next(after: at("2026-03-13T09:00:00Z")) == at("2026-03-15T09:00:00Z"))
        #expect(either.next(after: at("2026-03-15T09:00:00Z")) == at("2026-03-20T09:00:00Z"))
        // One of them `*`: the other alone decides.
        #expect(try CronSchedule("0 9 15 * *").next(after: at("2026-03-15T09:00:00Z")) == at("2026-04-15T09:00:00Z"))
        #expect(try CronSchedule("0 9 * * fri").next(after: at("2026-03-13T09:00:00Z")) == at("2026-03-20T09:00:00Z"))
        // A field starting with `*` counts as unrestricted (Vixie cron): odd days AND Fridays.
        #expect(try CronSchedule("0 9 */2 * fri").next(after: at("2026-03-13T09:00:00Z")) == at("2026-03-27T09:00:00Z"))
        // December 31 on a Sunday: 2034, then 2045, eleven years apart.
        let rare = try CronSchedule("0 0 31 12 */7")
        #expect(rare.next(after: at("2035-01-01T00:00:00Z")) == at("2045-12-31T00:00:00Z"))
        #expect(rare.previous(atOrBefore: at("2045-12-30T00:00:00Z")) == at("2034-12-31T00:00:00Z"))
        #expect(rare.everFires)
    }

    @Test func invalidFieldsNameTheField() {
        let cases: [(String, String)] = [
            ("* * * *", "expected 5 fields (minute hour day-of-month month day-of-week), found 4"),
            ("60 * * * *", "minute: 60 is out of range 0-59"),
            ("0 24 * * *", "hour: 24 is out of range 0-23"),
            ("0 0 0 * *", "day-of-month: 0 is out of range 1-31"),
            ("0 0 * 13 *", "month: 13 is out of range 1-12"),
            ("0 0 * * 8", "day-of-week: 8 is out of range 0-7"),
            ("0 0 * foo *", "month: 'foo' is not a number or month name"),
            ("0 0 * * funday", "day-of-week: 'funday' is not a number or day name"),
            ("x * * * *", "minute: 'x' is not a number"),
            ("*/0 * * * *", "minute: step '0' must be a number from 1 to 59"),
            ("0 */x * * *", "hour: step 'x' must be a number from 1 to 23"),
            ("0 0 20-10 * *", "day-of-month: range 20-10 ends before it starts"),
            ("1,,2 * * * *", "minute: empty list element"),
            ("0 0 1/2/3 * *", "day-of-month: '1/2/3' has more than one step"),
            ("0 -1 * * *", "hour: '' is not a number"),
        ]
        for (expression, message) in cases {
            #expect(throws: (any Error).self, "\(expression)") { try CronSchedule(expression) }
            do {
                _ = try CronSchedule(expression)
            } catch {
                #expect(error.description == message, "\(expression)")
            }
        }
        #expect(throws: CronParseError(field: .hour, reason: .outOfRange(24))) { try CronSchedule("0 24 * * *") }
        #expect(throws: CronParseError(field: nil, reason: .fieldCount(6))) { try CronSchedule("0 0 * * * *") }
    }

    @Test func mostRecentDueRunsOnceAfterDowntime() throws {
        let cron = try CronSchedule("0 * * * *")
        let lastRun = at("2026-03-10T10:00:00Z")
        // Down from 10:30 to 15:20: five scheduled times were missed; only the latest is due.
        #expect(cron.mostRecentDue(after: lastRun, now: at("2026-03-10T15:20:00Z")) == at("2026-03-10T15:00:00Z"))
        #expect(cron.mostRecentDue(after: lastRun, now: at("2026-03-10T10:59:59Z")) == nil)
        #expect(cron.mostRecentDue(after: nil, now: at("2026-03-10T10:59:59Z")) == at("2026-03-10T10:00:00Z"))

        // A scheduler polling every minute, with the outage: exactly one run after it.
        var last: Timestamp? = lastRun
        var runs: [Timestamp] = []
        var minute = at("2026-03-10T15:20:00Z")
        while minute <= at("2026-03-10T15:59:00Z") {
            if let due = cron.mostRecentDue(after: last, now: minute) {
                runs.append(due)
                last = due
            }
            minute = minute.adding(microseconds: 60_000_000)
        }
        #expect(runs == [at("2026-03-10T15:00:00Z")])
    }

    @Test func scheduledTimesAndDescription() throws {
        let cron = try CronSchedule("  */15   9-17 * * 1-5 ")
        #expect(cron.description == "*/15 9-17 * * 1-5")
        #expect(cron.isScheduled(at("2026-03-10T09:45:00Z")))
        #expect(!cron.isScheduled(at("2026-03-10T09:46:00Z")))
        #expect(!cron.isScheduled(at("2026-03-14T09:45:00Z"))) // a Saturday
        // next and previous agree: stepping forward from one time lands on the next, and back.
        var time = at("2026-02-27T16:00:00Z")
        for _ in 0..<100 {
            let next = try #require(cron.next(after: time))
            #expect(cron.previous(atOrBefore: next.adding(microseconds: -1)) == time)
            time = next
        }
    }
}

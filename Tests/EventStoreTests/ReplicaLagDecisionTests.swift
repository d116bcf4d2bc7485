@testable import EventStore
import Testing

/// What a standby's own reading makes of its lag (the readings themselves are taken on real
/// standbys in ReplicaReadingTests).
@Suite struct ReplicaLagDecisionTests {
    typealias Reading = ReplicaLag.Reading

    static func standby(receiver: Bool = true, ofPrimary: Double?, ofReceived: Double?, since: Double? = 42.5) -> Reading {
        Reading(inRecovery: true, receiverRunning: receiver, unreplayedOfPrimary: ofPrimary, unreplayedOfReceived: ofReceived,
                secondsSinceLastReplayedCommit: since)
    }

    @Test func aPrimaryIsNeverBehind() {
        #expect(ReplicaLag.lag(Reading(inRecovery: false, receiverRunning: false, unreplayedOfPrimary: nil, unreplayedOfReceived: nil,
                                       secondsSinceLastReplayedCommit: nil)) == .zero)
    }

    @Test func caughtUpWithThePrimarysLastReportIsZero() {
        #expect(ReplicaLag.lag(Self.standby(ofPrimary: 0, ofReceived: 0)) == .zero)
        // Replay ahead of the last report (WAL on disk since a restart).
        #expect(ReplicaLag.lag(Self.standby(ofPrimary: -8_192, ofReceived: -8_192)) == .zero)
    }

    /// A link slower than the primary's WAL: everything received is replayed, yet the primary
    /// reported more. Not caught up: the time since the last replayed commit.
    @Test func allReceivedReplayedButThePrimaryAheadIsBehind() {
        #expect(ReplicaLag.lag(Self.standby(ofPrimary: 16_777_216, ofReceived: 0)) == .milliseconds(42_500))
    }

    /// A role without pg_read_all_stats sees no latest_end_lsn: what was received decides.
    @Test func withoutThePrimarysReportWhatWasReceivedDecides() {
        #expect(ReplicaLag.lag(Self.standby(ofPrimary: nil, ofReceived: 0)) == .zero)
        #expect(ReplicaLag.lag(Self.standby(ofPrimary: nil, ofReceived: 100)) == .milliseconds(42_500))
    }

    @Test func noReceiverOrNoReplayedCommit() {
        #expect(ReplicaLag.lag(Self.standby(receiver: false, ofPrimary: nil, ofReceived: nil)) == .milliseconds(42_500))
        #expect(ReplicaLag.lag(Self.standby(receiver: false, ofPrimary: nil, ofReceived: nil, since: nil)) == nil)
        #expect(ReplicaLag.lag(Self.standby(ofPrimary: 5, ofReceived: 5, since: -3)) == .zero, "clocks apart: not negative")
        #expect(ReplicaLag.lag(Self.standby(ofPrimary: 5, ofReceived: 5, since: .nan)) == nil)
    }
}

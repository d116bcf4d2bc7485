import EventStore
import Testing

/// The repair's arithmetic: `xid8 = epoch << 32 | xid`, the epoch one above the highest id held.
@Suite("Transaction id repair")
struct TransactionIDRepairTests {
    @Test func theEpochIsOneAboveTheHighestIdHeld() {
        #expect(TransactionIDRepair.epoch(above: 1_024) == 1)
        #expect(TransactionIDRepair.epoch(above: (1 << 32) - 1) == 1)
        #expect(TransactionIDRepair.epoch(above: 1 << 32) == 2)
        #expect(TransactionIDRepair.epoch(above: 5 << 32 | 7) == 6)
    }

    @Test func theNextIdAfterTheRepairKeepsThe32BitCounterAndIsAboveEverything() {
        let repair = TransactionIDRepair(highest: 3 << 32 | 4_000_000_000, next: 812)
        #expect(repair.isNeeded)
        #expect(repair.epoch == 4)
        #expect(repair.nextAfterRepair == 4 << 32 | 812)
        #expect(repair.nextAfterRepair > repair.highest)
        #expect(!TransactionIDRepair(highest: 811, next: 812).isNeeded)
        #expect(TransactionIDRepair(highest: 812, next: 812).isNeeded)
    }

    @Test func theCommandsCanBePastedAsPrinted() {
        let repair = TransactionIDRepair(highest: 1_024, next: 727)
        #expect(repair.commands(dataDirectory: "/var/lib/postgresql/15/main") == [
            "pg_ctl stop -D /var/lib/postgresql/15/main -m fast",
            "pg_resetwal -e 1 -D /var/lib/postgresql/15/main",
            "pg_ctl start -D /var/lib/postgresql/15/main",
        ])
        #expect(repair.commands(dataDirectory: "/srv/pg data/it's")[1] == #"pg_resetwal -e 1 -D '/srv/pg data/it'\''s'"#)
    }

    @Test func theErrorSaysWhatHappenedAndWhatToRun() {
        let error = TransactionIDsBehindLog(holder: .checkpoint, held: 4_108, next: 812)
        #expect(error.description == """
            PostgreSQL's transaction ids are behind the event log: a reader's checkpoint in the log is at transaction 4108, \
            the database's next is 812. The database was probably restored from a dump (pg_dump) into a new cluster; \
            events appended now would sort before what readers have read and never be counted. Stop appending, and move \
            the database's counter past the log with pg_resetwal: engage db transaction-ids prints the command \
            (docs/reliability.md, "Transaction ids behind the log").
            """)
        #expect(error.repairEpoch == 1)
        #expect(throws: error) { try TransactionCounter.check(4_108, heldBy: .checkpoint, next: 812) }
        #expect(throws: Never.self) { try TransactionCounter.check(811, heldBy: .checkpoint, next: 812) }
    }
}

import Foundation

/// What must not go into the device's backups: the installation id (a backup restored onto a
/// second device would give both the same id, and two devices' events one device's) and the
/// extension's kept media (100 MB that a download replaces). Only Apple's platforms back
/// containers up; not exercised by the tests, which run on Linux.
package enum BackupExclusion {
    package static func exclude(_ path: String) {
        #if canImport(Darwin)
        var url = URL(fileURLWithPath: path)
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        try? url.setResourceValues(values)
        #endif
    }
}

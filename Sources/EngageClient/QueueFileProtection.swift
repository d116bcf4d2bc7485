import Foundation

/// The data protection class of every directory and file the client creates in the container.
///
/// Most pushes arrive while the device is locked. An app whose default protection is `complete`
/// (the Data Protection capability) would give the queue files that nobody can open while the
/// device is locked, so the Notification Service Extension could record nothing then. The client
/// therefore sets a class explicitly instead of inheriting the app's default. There is
/// deliberately no `complete` case.
public enum QueueFileProtection: String, Sendable, CaseIterable {
    /// Readable and writable from the first unlock after a restart on, also while locked
    /// (`FileProtectionType.completeUntilFirstUserAuthentication`, class C). The default.
    case completeUntilFirstUserAuthentication
    /// No protection (`FileProtectionType.none`): also before the first unlock.
    case none
}

/// Applies one protection class to what the queue creates. `observe` lets tests on Linux, which
/// has no data protection, see every path and the class it was given.
package struct FileProtector: Sendable {
    var protection: QueueFileProtection
    var observe: (@Sendable (String, QueueFileProtection) -> Void)?

    package init(protection: QueueFileProtection, observe: (@Sendable (String, QueueFileProtection) -> Void)? = nil) {
        self.protection = protection
        self.observe = observe
    }

    /// Only iOS-family systems have data protection; elsewhere (macOS, Linux) only `observe` runs.
    package func apply(to path: String) {
        observe?(path, protection)
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        let type: FileProtectionType = switch protection {
        case .completeUntilFirstUserAuthentication: .completeUntilFirstUserAuthentication
        case .none: .none
        }
        try? FileManager.default.setAttributes([.protectionKey: type], ofItemAtPath: path)
        #endif
    }
}

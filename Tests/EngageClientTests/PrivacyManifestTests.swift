import Foundation
import Testing

/// The App Store requires SDKs to declare the "required reason" APIs they use. These tests read
/// each client product's `PrivacyInfo.xcprivacy` and its sources, and check that every category
/// the sources use is declared with the reason that fits, and that nothing unused is declared.
@Suite("Privacy manifests")
struct PrivacyManifestTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // EngageClientTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    /// Required-reason API categories, the calls that belong to them, and the reason engage has.
    static let categories: [(name: String, calls: [String], reason: String)] = [
        // Sizes and dates of the queue's files and of the extension's kept media, all inside the
        // app group container.
        ("NSPrivacyAccessedAPICategoryFileTimestamp",
         ["stat(", "fstat(", "lstat(", "attributesOfItem", "modificationDate", "creationDate", "fileSizeKey", "getattrlist"], "C617.1"),
        // Elapsed time within the app (budgets, processing_ms, the clock set between recording and
        // sending); only intervals leave the device.
        ("NSPrivacyAccessedAPICategorySystemBootTime",
         ["ContinuousClock", "systemUptime", "mach_absolute_time", "CLOCK_MONOTONIC", "CLOCK_BOOTTIME", "kern.boottime"], "35F9.1"),
        // Shared with the app's own extensions through the app group.
        ("NSPrivacyAccessedAPICategoryUserDefaults", ["UserDefaults"], "1C8F.1"),
        ("NSPrivacyAccessedAPICategoryDiskSpace", ["volumeAvailableCapacity", "statfs(", "systemFreeSize"], "E174.1"),
    ]

    static func manifest(_ target: String) throws -> [String: Any] {
        let data = try Data(contentsOf: root.appendingPathComponent("Sources/\(target)/PrivacyInfo.xcprivacy"))
        return try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
    }

    static func sources(_ target: String) throws -> String {
        let directory = root.appendingPathComponent("Sources/\(target)")
        let files = try #require(FileManager.default.enumerator(atPath: directory.path)).compactMap { $0 as? String }
        return try files.filter { $0.hasSuffix(".swift") }.map { try String(contentsOf: directory.appendingPathComponent($0), encoding: .utf8) }
            .joined(separator: "\n")
    }

    @Test(arguments: ["EngageClient", "EngageNotificationService"])
    func declaredReasonsMatchTheAPIsUsed(target: String) throws {
        let manifest = try Self.manifest(target)
        #expect(manifest["NSPrivacyTracking"] as? Bool == false)
        #expect((manifest["NSPrivacyTrackingDomains"] as? [Any])?.isEmpty ?? true)
        let declared = try #require(manifest["NSPrivacyAccessedAPITypes"] as? [[String: Any]])
        var reasons: [String: [String]] = [:]
        for entry in declared {
            let name = try #require(entry["NSPrivacyAccessedAPIType"] as? String)
            reasons[name] = try #require(entry["NSPrivacyAccessedAPITypeReasons"] as? [String])
        }
        let code = try Self.sources(target)
        for category in Self.categories {
            let uses = category.calls.filter { code.contains($0) }
            if uses.isEmpty {
                #expect(reasons[category.name] == nil, "\(target) declares \(category.name) but uses none of its APIs")
            } else {
                #expect(reasons[category.name] == [category.reason], "\(target) uses \(uses) and must declare \(category.name) \(category.reason)")
            }
        }
    }

    /// What the client sends: engagement with notifications and a pseudonymous installation
    /// id, for analytics, not linked to an identity and not used for tracking.
    @Test func collectedDataIsDeclared() throws {
        let collected = try #require(try Self.manifest("EngageClient")["NSPrivacyCollectedDataTypes"] as? [[String: Any]])
        #expect(Set(collected.compactMap { $0["NSPrivacyCollectedDataType"] as? String })
                == ["NSPrivacyCollectedDataTypeProductInteraction", "NSPrivacyCollectedDataTypeDeviceID"])
        for entry in collected {
            #expect(entry["NSPrivacyCollectedDataTypeLinked"] as? Bool == false)
            #expect(entry["NSPrivacyCollectedDataTypeTracking"] as? Bool == false)
            #expect(entry["NSPrivacyCollectedDataTypePurposes"] as? [String] == ["NSPrivacyCollectedDataTypePurposeAnalytics"])
        }
    }
}

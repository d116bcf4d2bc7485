import Foundation
import Testing

/// EngageCore's folders are layers inside one module, so the compiler does not keep them apart:
/// a lower folder must not name a type or function declared in a higher one.
@Suite struct LayeringTests {
    static let core = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/EngageCore")

    /// Swift sources of a folder, as (file name, text).
    static func files(_ folder: String) throws -> [(String, String)] {
        let directory = core.appendingPathComponent(folder)
        return try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".swift") }.sorted().map {
            ($0, try String(contentsOf: directory.appendingPathComponent($0), encoding: .utf8))
        }
    }

    /// Names declared at the top level of a folder's files (types, free functions).
    static func declarations(_ folder: String) throws -> Set<String> {
        let pattern = try NSRegularExpression(pattern: #"^(?:public |private |fileprivate |internal )?(?:final )?(?:struct|enum|class|protocol|typealias|func) (\w+)"#,
                                              options: .anchorsMatchLines)
        var names = Set<String>()
        for (_, text) in try files(folder) {
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                names.insert((text as NSString).substring(with: match.range(at: 1)))
            }
        }
        return names
    }

    @Test(arguments: [("Events", "Ingest"), ("JSON", "Events"), ("JSON", "Ingest")])
    func aLowerFolderNamesNothingOfAHigherOne(lower: String, higher: String) throws {
        let names = try Self.declarations(higher)
        #expect(!names.isEmpty, "no declarations found in \(higher): is the path right? \(Self.core.path)")
        for (file, text) in try Self.files(lower) {
            let named = names.intersection(text.split { !($0.isLetter || $0.isNumber || $0 == "_") }.map(String.init))
            #expect(named.isEmpty, "\(lower)/\(file) names \(named.sorted()) of \(higher)")
        }
    }
}

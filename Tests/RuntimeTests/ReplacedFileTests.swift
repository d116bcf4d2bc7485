import Foundation
import Glibc
import Runtime
import Testing

@Suite("Files replaced whole")
struct ReplacedFileTests {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "engage-replaced-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func contents(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }
    func mode(_ path: String) -> mode_t {
        var status = stat()
        return stat(path, &status) == 0 ? status.st_mode & 0o7777 : 0
    }

    /// A reader that opened the old report (a web server sending it) reads it whole: the new one
    /// is another file renamed over the name, not the old one truncated and written again.
    @Test func aReaderOfTheOldFileReadsItWhole() throws {
        let path = directory + "/report.html"
        try ReplacedFile.write(Array("old report".utf8), to: path)
        chmod(path, 0o640)
        let reader = try #require(FileHandle(forReadingAtPath: path))
        try ReplacedFile.write(Array("new report, longer".utf8), to: path)
        #expect(String(decoding: reader.readDataToEndOfFile(), as: UTF8.self) == "old report")
        #expect(try contents(path) == "new report, longer")
        #expect(mode(path) == 0o640)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["report.html"])
    }

    /// The copy gets the old file's owner and group (a group a web server reads it through).
    @Test(.enabled(if: geteuid() == 0, "only root can give a file to another user"))
    func theOwnerAndGroupAreKept() throws {
        let path = directory + "/report.html"
        try ReplacedFile.write(Array("old".utf8), to: path)
        #expect(chown(path, 4321, 8765) == 0)
        var before = stat()
        stat(path, &before)
        try ReplacedFile.write(Array("new".utf8), to: path)
        var after = stat()
        stat(path, &after)
        #expect(after.st_ino != before.st_ino, "replaced, not rewritten")
        #expect(after.st_uid == 4321 && after.st_gid == 8765)
    }

    /// No copy can be made beside it (here: its name is too long for a copy's name): the file
    /// is written in place rather than not at all.
    @Test func aFileThatCannotHaveACopyBesideItIsWrittenInPlace() throws {
        let path = directory + "/" + String(repeating: "r", count: 240) + ".html"
        try ReplacedFile.write(Array("old".utf8), to: path)
        var before = stat()
        stat(path, &before)
        try ReplacedFile.write(Array("new".utf8), to: path)
        var after = stat()
        stat(path, &after)
        #expect(try contents(path) == "new")
        #expect(after.st_ino == before.st_ino)
    }

    /// Through a link the file it names is replaced and the link stays; a link to a file not made
    /// yet makes it.
    @Test func aLinkKeepsPointingAtTheReplacedFile() throws {
        let target = directory + "/target.html", link = directory + "/link.html"
        try ReplacedFile.write(Array("first".utf8), to: target)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        try ReplacedFile.write(Array("second".utf8), to: link)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target)
        #expect(try contents(target) == "second")

        let dangling = directory + "/dangling.html", later = directory + "/later.html"
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: later)
        try ReplacedFile.write(Array("made".utf8), to: dangling)
        #expect(try contents(later) == "made")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: dangling) == later)
    }

    /// A FIFO (or `/dev/stdout`) is written through, not replaced by a regular file.
    @Test func aFIFOIsWrittenThrough() throws {
        let fifo = directory + "/pipe"
        #expect(mkfifo(fifo, 0o600) == 0)
        // Opened without waiting for a writer, so that the write below does not wait for a reader.
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        defer { close(reader) }
        try ReplacedFile.write(Array("through the pipe".utf8), to: fifo)
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(reader, &buffer, buffer.count)
        #expect(count == 16 && String(decoding: buffer.prefix(16), as: UTF8.self) == "through the pipe")
        var status = stat()
        #expect(stat(fifo, &status) == 0 && (status.st_mode & S_IFMT) == S_IFIFO)
    }

    @Test func aDirectoryThatCannotBeWrittenIsAnErrorThatNamesWhy() {
        let error = #expect(throws: ReplacedFile.WriteError.self) {
            try ReplacedFile.write(Array("x".utf8), to: directory + "/missing/report.html")
        }
        #expect(error?.description == "cannot open: No such file or directory")
    }
}

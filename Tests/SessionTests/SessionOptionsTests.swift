#if canImport(Glibc)
import Glibc
#endif
import SessionManagement
import XCTest

final class SessionOptionsTests: XCTestCase {
    private var directory = ""

    override func setUp() {
        var template = Array("/tmp/jackvu-session-XXXXXX".utf8CString)
        directory = String(cString: mkdtemp(&template))
    }

    override func tearDown() {
        _ = system("rm -rf '\(directory)'")
    }

    func testNothingSavedIsNil() throws {
        XCTAssertNil(try SessionOptions.load(from: directory + "/client.nABCD"))
    }

    func testSaveThenLoadGivesTheSameArgumentsAndCreatesTheDirectory() throws {
        let arguments = ["--channels", "3", "--connect", "system:capture_[12]", "--send", "peak,rms", "--name", "a b  c#"]
        let instance = directory + "/session/jackvu.nABCD"
        try SessionOptions.save(arguments, program: "jackvu", to: instance)
        let text = try String(contentsOfFile: instance + "/options", encoding: .utf8)
        XCTAssertTrue(text.hasPrefix("# jackvu options"), text)
        XCTAssertEqual(try SessionOptions.load(from: instance), arguments)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: instance), ["options"], "no temporary file left")
    }

    func testSavingAgainReplacesTheFile() throws {
        try SessionOptions.save(["--channels", "8"], program: "jackvu", to: directory)
        try SessionOptions.save(["--rate", "5"], program: "jackvu", to: directory)
        XCTAssertEqual(try SessionOptions.load(from: directory), ["--rate", "5"])
    }

    func testAnArgumentWithANewlineOrALeadingHashIsRefused() {
        XCTAssertThrowsError(try SessionOptions.save(["a\nb"], program: "jackvu", to: directory))
        XCTAssertThrowsError(try SessionOptions.save(["#x"], program: "jackvu", to: directory))
        XCTAssertNil(try SessionOptions.load(from: directory))
    }

    func testAnUnwritableDirectoryIsAClearError() {
        XCTAssertThrowsError(try SessionOptions.save(["x"], program: "jackvu", to: "/proc/jackvu/x")) { error in
            XCTAssertTrue("\(error)".hasPrefix("cannot create /proc/jackvu"), "\(error)")
        }
    }

    /// A symlink planted where a fixed temporary name would be (`options.new`, the old name)
    /// is neither followed nor touched, and the file it points to is not written.
    func testAPlantedSymlinkIsNotFollowed() throws {
        let victim = directory + "/victim"
        try "precious\n".write(toFile: victim, atomically: true, encoding: .utf8)
        XCTAssertEqual(symlink(victim, directory + "/options.new"), 0)
        try SessionOptions.save(["--rate", "5"], program: "jackvu", to: directory)
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "precious\n")
        XCTAssertEqual(try SessionOptions.load(from: directory), ["--rate", "5"])
        var st = stat()
        XCTAssertEqual(lstat(directory + "/options", &st), 0)
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFREG, "options is a file of its own, not the link")
        XCTAssertEqual(st.st_mode & 0o777, 0o644)
    }
}

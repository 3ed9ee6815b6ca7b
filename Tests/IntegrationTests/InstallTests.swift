import Foundation
import TestSupport
import XCTest

/// Tools/install.sh and Tools/package.sh for real: release binaries run from the prefix with
/// no Swift toolchain on PATH, the man pages render, the completions complete, systemd accepts
/// the unit, the uninstall leaves the prefix as it was; the .deb installs and removes cleanly.
final class InstallTests: XCTestCase {
    /// The checkout (the scripts live in it).
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    private var folder = ""

    override func setUp() {
        folder = NSTemporaryDirectory() + "jackvu-install-\(getpid())-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Every path under `dir`, sorted.
    private func tree(_ dir: String) -> [String] {
        ((FileManager.default.enumerator(atPath: dir)?.allObjects as? [String]) ?? []).sorted()
    }

    /// Runs `command` with a clean environment: no Swift toolchain on PATH, no library path.
    private func clean(_ command: [String], _ extra: [String: String] = [:]) throws -> CommandResult {
        let env = ["PATH=/usr/bin:/bin", "HOME=\(folder)", "LANG=C.UTF-8"] + extra.map { "\($0.key)=\($0.value)" }
        return try Executables.run("env", ["-i"] + env + command, timeout: 60)
    }

    func testInstallRunsWithoutTheToolchainAndUninstallsToTheSamePrefix() throws {
        let prefix = folder + "/prefix"
        // Something of somebody else's in the prefix already: it must stay.
        try FileManager.default.createDirectory(atPath: prefix + "/share/man/man1", withIntermediateDirectories: true)
        try "x".write(toFile: prefix + "/share/man/man1/other.1", atomically: true, encoding: .utf8)
        let before = tree(prefix)

        let install = try Executables.run("bash", [root + "/Tools/install.sh", "--prefix", prefix, "--no-setup"], timeout: 3600)
        XCTAssertEqual(install.status, 0, install.stderr.suffix(3000).description)
        let jackvu = prefix + "/bin/jackvu", jacktone = prefix + "/bin/jacktone"

        // The binaries need no Swift runtime of the toolchain's.
        let libraries = try Executables.run("ldd", [jackvu]).stdout
        XCTAssertFalse(libraries.contains("swift"), libraries)
        XCTAssertTrue(libraries.contains("libjack.so.0"), libraries)
        let version = try clean([jackvu, "--version"])
        XCTAssertEqual(version.status, 0, version.stderr)
        XCTAssertEqual(try clean([jacktone, "--version"]).stdout, version.stdout)
        XCTAssertTrue(version.stdout.range(of: #"^\d+\.\d+\.\d+\n$"#, options: .regularExpression) != nil, version.stdout)

        // And they work: the installed jacktone into the installed jackvu names A4.
        let server = try JackServer(label: "install")
        let vu = try BackgroundProcess(
            "env", ["-i", "PATH=/usr/bin:/bin", "JACK_DEFAULT_SERVER=\(server.name)", jackvu, "--channels", "1", "--text"], label: "installed-jackvu")
        defer { vu.stop() }
        try waitForPortsListed(server, ["jackvu:in_1"])
        let tone = try BackgroundProcess(
            "env", ["-i", "PATH=/usr/bin:/bin", "JACK_DEFAULT_SERVER=\(server.name)", jacktone, "--connect", "jackvu:in_1"],
            label: "installed-jacktone")
        defer { tone.stop() }
        let heard = vu.waitForStdout(timeout: 20) { text in
            OSCText.updates(text).last.map { $0.string("/jackvu/ch/1/pitch", 1) == "A4" } ?? false
        }
        XCTAssertNotNil(heard, "installed jackvu hears the installed jacktone: \(vu.stdout.suffix(500)) \(vu.stderr) \(tone.stderr)")
        tone.stop()
        vu.stop()

        // The installed in-process form loads into a server told where it is.
        let internalServer = try JackServer(label: "installed-so", serverEnvironment: ["JACK_INTERNAL_DIR": prefix + "/lib/jack"])
        let load = try Executables.run("jack_load", ["-i", "--channels 1", "jackvu", "jackvu"], environment: internalServer.environment)
        XCTAssertEqual(load.status, 0, load.stdout + load.stderr)
        try waitForPortsListed(internalServer, ["jackvu:meter_1"])
        XCTAssertEqual(try Executables.run("jack_unload", ["jackvu"], environment: internalServer.environment).status, 0)
        internalServer.stop()

        // man renders both pages, with their options, exit codes and examples.
        let page = try clean(["man", "-l", prefix + "/share/man/man1/jackvu.1"], ["MANWIDTH": "100", "MAN_KEEP_FORMATTING": ""])
        XCTAssertEqual(page.status, 0, page.stderr)
        for expected in ["--fft-size", "--connect", "EXIT STATUS", "the client name is taken", "OSC ADDRESS SPACE",
                         "/loudness/integrated", "EXAMPLES", "systemctl --user enable --now jackvu@mixbus", "NSM_URL", "analyze"] {
            XCTAssertTrue(page.stdout.lowercased().contains(expected.lowercased()), "jackvu(1) lacks \(expected)")
        }
        let tonePage = try clean(["man", "-l", prefix + "/share/man/man1/jacktone.1"], ["MANWIDTH": "100"])
        for expected in ["--freq", "--level", "EXIT STATUS", "matches no input port", "EXAMPLES"] {
            XCTAssertTrue(tonePage.stdout.lowercased().contains(expected.lowercased()), "jacktone(1) lacks \(expected)")
        }

        // bash completes `jackvu --fft` to `--fft-size`.
        let script = """
            source '\(prefix)/share/bash-completion/completions/jackvu'
            COMP_WORDS=(jackvu --fft); COMP_CWORD=1; COMP_LINE='jackvu --fft'; COMP_POINT=${#COMP_LINE}
            _jackvu jackvu --fft jackvu
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let completion = try clean(["bash", "-c", script, "-"], ["PATH": "\(prefix)/bin:/usr/bin:/bin"])
        XCTAssertEqual(completion.stdout, "--fft-size\n", completion.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: prefix + "/share/zsh/site-functions/_jackvu"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: prefix + "/share/fish/vendor_completions.d/jacktone.fish"))

        // systemd accepts the user unit (an instance of it), pointing at the installed binary.
        let unit = prefix + "/lib/systemd/user/jackvu@.service"
        let unitText = try String(contentsOfFile: unit, encoding: .utf8)
        XCTAssertTrue(unitText.contains("ExecStart=\(jackvu) --quiet --name %i $JACKVU_OPTIONS"), unitText)
        // Its one writable place, for the log (a relative --log path lands there).
        XCTAssertTrue(unitText.contains("\nStateDirectory=jackvu\n") && unitText.contains("\nWorkingDirectory=%S/jackvu\n"), unitText)
        // systemd-analyze is installed by the test command (Tools/setup.sh --tests).
        _ = try Executables.resolve("systemd-analyze")
        let instance = folder + "/jackvu@mixbus.service"
        try unitText.write(toFile: instance, atomically: true, encoding: .utf8)
        let verify = try clean(["systemd-analyze", "verify", instance], ["MANPATH": prefix + "/share/man"])
        XCTAssertEqual(verify.status, 0, verify.stderr + verify.stdout)
        // Its sandboxing, as systemd scores it for a user unit (9.8 "UNSAFE" without any).
        let runtime = folder + "/xdg-runtime"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let security = try clean(["systemd-analyze", "security", "--offline=true", "--user", instance], ["XDG_RUNTIME_DIR": runtime])
        let exposure = security.stdout.split(separator: "\n").first { $0.contains("Overall exposure level") }
            .flatMap { line in line.split(separator: " ").compactMap { Double($0) }.first }
        XCTAssertNotNil(exposure, security.stdout + security.stderr)
        XCTAssertLessThanOrEqual(exposure ?? 10, 3.0, "systemd-analyze security: \(security.stdout.suffix(200))")
        print("systemd-analyze security --offline=true --user: \(exposure ?? -1)")

        let uninstall = try Executables.run("bash", [root + "/Tools/install.sh", "--prefix", prefix, "--uninstall"])
        XCTAssertEqual(uninstall.status, 0, uninstall.stderr)
        XCTAssertEqual(tree(prefix), before, "the prefix is as it was before the install")
    }

    func testDebianPackageBuildsInstallsAndRemoves() throws {
        let built = try Executables.run("bash", [root + "/Tools/package.sh", "--output", folder, "--no-setup"], timeout: 3600)
        XCTAssertEqual(built.status, 0, built.stderr.suffix(3000).description)
        let deb = try XCTUnwrap(built.stdout.split(separator: "\n").last.map(String.init))
        XCTAssertTrue(deb.hasSuffix("_amd64.deb") || deb.hasSuffix(".deb"), deb)
        let info = try Executables.run("dpkg-deb", ["-I", deb])
        XCTAssertEqual(info.status, 0, info.stderr)
        let depends = try XCTUnwrap(info.stdout.split(separator: "\n").first { $0.hasPrefix(" Depends:") }, info.stdout)
        for library in ["libjack-jackd2-0", "libfftw3-single3", "liblo7", "libsndfile1", "libmpg123-0", "libc6"] {
            XCTAssertTrue(depends.contains(library), "Depends names \(library): \(depends)")
        }
        XCTAssertFalse(depends.contains("swift"), String(depends))
        let contents = try Executables.run("dpkg-deb", ["-c", deb]).stdout
        for path in ["./usr/bin/jackvu", "./usr/bin/jacktone", "./usr/share/man/man1/jackvu.1.gz", "./usr/share/man/man1/jacktone.1.gz",
                     "./usr/share/bash-completion/completions/jackvu", "./usr/lib/systemd/user/jackvu@.service",
                     "./usr/share/doc/jackvu/copyright", "./usr/lib/x86_64-linux-gnu/jack/jackvu.so",
                     "./usr/share/jackvu/prometheus/jackvu-alerts.yml", "./usr/share/jackvu/prometheus/prometheus-fleet.yml",
                     "./usr/share/jackvu/grafana/jackvu-dashboard.json", "./usr/lib/lv2/jackvu.lv2/jackvu.so",
                     "./usr/lib/lv2/jackvu.lv2/manifest.ttl", "./usr/lib/lv2/jackvu.lv2/jackvu.ttl"] {
            XCTAssertTrue(contents.contains(path), "the package holds \(path)")
        }
        XCTAssertFalse(contents.contains("install-manifest"), "dpkg keeps the package's file list, not install.sh")

        guard getuid() == 0 else {
            throw skipOrFail("installing a .deb needs root (CI and Tools/test.sh as root run this part)")
        }
        XCTAssertNotEqual(try Executables.run("dpkg-query", ["-W", "-f=${Status}", "jackvu"]).stdout, "install ok installed",
                          "a jackvu package was installed before the test: not touching it")
        let env = ["DEBIAN_FRONTEND": "noninteractive"]
        let install = try Executables.run("apt-get", ["install", "-y", "--no-install-recommends", deb], environment: env, timeout: 600)
        XCTAssertEqual(install.status, 0, install.stdout.suffix(2000) + install.stderr)
        defer { _ = try? Executables.run("apt-get", ["remove", "-y", "jackvu"], environment: env, timeout: 600) }
        let files = try Executables.run("dpkg", ["-L", "jackvu"]).stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(files.contains("/usr/bin/jackvu"), files.joined(separator: "\n"))
        let version = try clean(["/usr/bin/jackvu", "--version"])
        XCTAssertEqual(version.status, 0, version.stderr)
        XCTAssertTrue(deb.contains("jackvu_\(version.stdout.trimmingCharacters(in: .whitespacesAndNewlines))_"), deb)
        // The LV2 plugin where hosts look by default: lilv lists it.
        let plugins = try clean(["lv2ls"])
        XCTAssertTrue(plugins.stdout.contains("urn:jackvu:lv2:stereo"), "lv2ls finds the installed plugin: \(plugins.stdout)")
        let page = try clean(["man", "jackvu"], ["MANWIDTH": "100"])
        XCTAssertTrue(page.stdout.contains("--fft-size"), "man jackvu finds the installed page: \(page.stderr)")

        let remove = try Executables.run("apt-get", ["remove", "-y", "jackvu"], environment: env, timeout: 600)
        XCTAssertEqual(remove.status, 0, remove.stdout.suffix(2000) + remove.stderr)
        let left = files.filter { path in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
        XCTAssertEqual(left, [], "apt-get remove leaves no file of the package")
    }
}

extension InstallTests {
    /// `--cpu` takes `native` or a CPU Swift knows; anything else is one line and exit 64,
    /// before any build (the build with `--cpu haswell` is measured in BENCHMARKS.md). Asking
    /// swiftc about the name leaves nothing in the caller's TMPDIR (swiftc leaves an empty
    /// TemporaryDirectory.XXXXXX folder there; Tools/swift-tmp.sh gives it one of its own).
    func testInstallRefusesACPUSwiftDoesNotKnow() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tools/install.sh").path
        let tmp = try makeTemporaryFolder("cpu-tmp")
        defer { removeTemporaryFolder(tmp) }
        for bad in ["bogus", "a;b", "-x"] {
            let r = try Executables.run("bash", [script, "--cpu", bad, "--prefix", tmp.path + "/prefix", "--no-setup"], environment: ["TMPDIR": tmp.path])
            XCTAssertEqual(r.status, 64, "\(bad): \(r.stderr)")
            XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
            XCTAssertTrue(r.stderr.contains("not a CPU Swift knows"), r.stderr)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: tmp.path), [], "left in TMPDIR")
    }
}

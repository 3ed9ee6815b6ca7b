#if canImport(Glibc)
import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// jackvu as a Prometheus target, with Debian's real `prometheus` and `promtool`: two jackvu
/// instances on two JACK servers scraped by a Prometheus the test starts on loopback (its own
/// configuration and data directory, file-based discovery as the shipped example), PromQL
/// through its HTTP API, the shipped alert rules loaded, checked and unit-tested, every
/// expression of the shipped Grafana dashboard answered; then the same across two network
/// namespaces as two machines.
final class PrometheusTests: XCTestCase {
    private var folder = ""
    private var repository: String { URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path }

    override func setUpWithError() throws {
        folder = NSTemporaryDirectory() + "jackvu-prom-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Waits until `condition` holds, at most `timeout` s (`eventually`): true, or nil.
    private func waitFor(timeout: Double, _ condition: () -> Bool) -> Bool? {
        eventually(timeout: timeout, condition) ? true : nil
    }

    /// Prometheus scraping `targets` every second (file-based discovery), with the shipped
    /// alert rules; returns once it is ready, with its port.
    private func startPrometheus(targets: [String]) throws -> (BackgroundProcess, Int) {
        let port = freeTCPPort()
        let sd = "\(folder)/targets.json"
        try "[{\"targets\": [\(targets.map { "\"\($0)\"" }.joined(separator: ", "))]}]".write(toFile: sd, atomically: true, encoding: .utf8)
        let config = """
            global: {scrape_interval: 1s, evaluation_interval: 1s}
            rule_files: ["\(repository)/Tools/prometheus/jackvu-alerts.yml"]
            scrape_configs:
              - job_name: jackvu
                file_sd_configs: [{files: ["\(sd)"]}]
            """
        try config.write(toFile: "\(folder)/prometheus.yml", atomically: true, encoding: .utf8)
        let prometheus = try BackgroundProcess(
            try Executables.resolve("prometheus"),
            ["--config.file=\(folder)/prometheus.yml", "--storage.tsdb.path=\(folder)/data", "--web.listen-address=127.0.0.1:\(port)",
             "--log.level=warn"])
        guard waitFor(timeout: 30, { httpGet(port: port, path: "/-/ready")?.status == 200 }) != nil else {
            prometheus.stop()
            throw FixtureError("prometheus did not become ready: \(prometheus.stderr)")
        }
        return (prometheus, port)
    }

    /// A PromQL query's result vector: each series' labels and value.
    private func query(_ port: Int, _ promql: String) -> [(labels: [String: String], value: Double)] {
        let encoded = promql.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        guard let r = httpGet(port: port, path: "/api/v1/query?query=\(encoded)"), r.status == 200,
              let object = try? JSONSerialization.jsonObject(with: Data(dechunked(r).utf8)) as? [String: Any],
              let data = object["data"] as? [String: Any], let result = data["result"] as? [[String: Any]] else { return [] }
        return result.compactMap { series in
            guard let labels = series["metric"] as? [String: String], let pair = series["value"] as? [Any],
                  let text = pair.last as? String, let value = Double(text) else { return nil }
            return (labels, value)
        }
    }

    /// An HTTP body sent in chunks put back together (Go's server chunks larger answers).
    private func dechunked(_ r: (status: Int, headers: String, body: String)) -> String {
        guard r.headers.lowercased().contains("transfer-encoding: chunked") else { return r.body }
        var out = "", rest = Substring(r.body)
        while let lineEnd = rest.range(of: "\r\n"), let size = Int(rest[..<lineEnd.lowerBound], radix: 16), size > 0 {
            let start = rest.utf8.index(lineEnd.upperBound, offsetBy: 0)
            let end = rest.utf8.index(start, offsetBy: size)
            out += rest[start..<end]
            rest = rest[end...].dropFirst(2)
        }
        return out
    }

    /// A jacktone at −20 dBFS peak (997 Hz: a mono programme of −23.0 LUFS) and jackvu with
    /// `--metrics` on one server.
    private func startInstance(_ server: JackServer, metrics: String, prefix: [String] = []) throws -> [BackgroundProcess] {
        let tone = try BackgroundProcess(try Executables.product("jacktone"), ["--freq", "997", "--level", "-20"], environment: server.environment)
        try waitForPortsListed(server, ["jacktone:out"])
        let vu = try BackgroundProcess(
            try Executables.product("jackvu"),
            ["--channels", "1", "--connect", "jacktone:out", "--target", "ebu-r128", "--quiet", "--metrics", metrics],
            environment: server.environment)
        return [tone, vu]
    }

    /// Two instances on two servers, one Prometheus: up, the short-term loudness of the
    /// −23 LUFS tone within 0.2 LU on both, counters that grow, the shipped rules loaded and
    /// unit-tested, every dashboard expression answered, `promtool check metrics` accepting
    /// the text exposition and Prometheus itself the OpenMetrics one (which it asks for).
    func testPrometheusScrapesTwoInstancesAndAnswersEveryDashboardQuery() throws {
        let a = try JackServer(label: "proma"), b = try JackServer(label: "promb")
        let ports = [freeTCPPort(), freeTCPPort()]
        var processes = try startInstance(a, metrics: "\(ports[0])") + (try startInstance(b, metrics: "\(ports[1])"))
        defer { processes.forEach { $0.stop() } }
        for port in ports {
            XCTAssertNotNil(waitFor(timeout: 20) { httpGet(port: port, path: "/metrics")?.body.contains("jackvu_short_term_loudness_lufs") ?? false },
                            "jackvu --metrics \(port): \(processes.map(\.stderr))")
        }
        // The exposition, as promtool lints it.
        let text = try XCTUnwrap(httpGet(port: ports[0], path: "/metrics"))
        XCTAssertTrue(text.headers.lowercased().contains("content-type: text/plain; version=0.0.4"), text.headers)
        try text.body.write(toFile: "\(folder)/metrics.txt", atomically: true, encoding: .utf8)
        let lint = try Executables.run("/bin/sh", ["-c", "promtool check metrics < \(folder)/metrics.txt"])
        XCTAssertEqual(lint.status, 0, "promtool check metrics: \(lint.stdout) \(lint.stderr)")
        print("one instance, 1 channel, 1 programme: \(text.body.utf8.count) bytes, \(text.body.split(separator: "\n").filter { !$0.hasPrefix("#") }.count) series")

        let (prometheus, promPort) = try startPrometheus(targets: ports.map { "127.0.0.1:\($0)" })
        processes.append(prometheus)
        XCTAssertNotNil(waitFor(timeout: 30) { query(promPort, "up{job=\"jackvu\"} == 1").count == 2 }, "both targets up: \(prometheus.stderr)")
        let loud = waitFor(timeout: 30) {
            let r = query(promPort, "jackvu_short_term_loudness_lufs")
            return r.count == 2 && r.allSatisfy { abs($0.value - -23) <= 0.2 }
        }
        XCTAssertNotNil(loud, "short-term loudness: \(query(promPort, "jackvu_short_term_loudness_lufs"))")
        let before = query(promPort, "jackvu_process_cycles_total")
        XCTAssertEqual(before.count, 2)
        XCTAssertNotNil(waitFor(timeout: 30) {
            let now = query(promPort, "jackvu_process_cycles_total")
            return now.count == 2 && now.allSatisfy { n in before.contains { $0.labels["instance"] == n.labels["instance"] && n.value > $0.value } }
        }, "the cycle counters grow")

        // The shipped rules (nine, JackvuServerStalled the latest): loaded by this Prometheus, checked and unit-tested by promtool.
        let rules = try XCTUnwrap(httpGet(port: promPort, path: "/api/v1/rules"))
        XCTAssertEqual(dechunked(rules).components(separatedBy: "\"type\":\"alerting\"").count - 1, 9, dechunked(rules).prefix(400).description)
        let check = try Executables.run("promtool", ["check", "rules", "\(repository)/Tools/prometheus/jackvu-alerts.yml"])
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
        let unit = try Executables.run("/bin/sh", ["-c", "cd '\(repository)/Tools/prometheus' && promtool test rules jackvu-alerts.test.yml"])
        XCTAssertEqual(unit.status, 0, unit.stdout + unit.stderr)
        let config = try Executables.run("promtool", ["check", "config", "\(folder)/prometheus.yml"])
        XCTAssertEqual(config.status, 0, config.stdout + config.stderr)

        // Every expression of the dashboard, with its variables as "every value", returns data.
        let dashboard = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(repository)/Tools/grafana/jackvu-dashboard.json")))
        var expressions: [String] = []
        func collect(_ value: Any) {
            if let d = value as? [String: Any] {
                if let e = d["expr"] as? String { expressions.append(e) }
                d.values.forEach(collect)
            } else if let a = value as? [Any] { a.forEach(collect) }
        }
        collect(dashboard)
        XCTAssertGreaterThanOrEqual(expressions.count, 12)
        for e in expressions {
            let promql = e.replacingOccurrences(of: "$instance", with: ".+").replacingOccurrences(of: "$programme", with: ".+")
            XCTAssertNotNil(waitFor(timeout: 20) { !query(promPort, promql).isEmpty }, "the dashboard's \(e) returns nothing")
        }

        // OpenMetrics when the scraper asks for it.
        guard let fd = connectTCP(port: ports[1]) else { return XCTFail("no --metrics on \(ports[1])") }
        defer { close(fd) }
        sendAll(fd, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:\(ports[1])\r\nAccept: application/openmetrics-text; version=1.0.0\r\nConnection: close\r\n\r\n")
        var data = [UInt8](), buffer = [UInt8](repeating: 0, count: 65536)
        while case let n = recv(fd, &buffer, buffer.count, 0), n > 0 { data += buffer[0..<n] }
        let open = String(decoding: data, as: UTF8.self)
        XCTAssertTrue(open.lowercased().contains("content-type: application/openmetrics-text; version=1.0.0"), open.prefix(300).description)
        XCTAssertTrue(open.hasSuffix("# EOF\n") && open.contains("# TYPE jackvu_xruns counter") && open.contains("jackvu_xruns_total "), open.suffix(300).description)
        // Prometheus asks for OpenMetrics first, so its scrapes above parsed that form: its
        // metadata has the counter families by their OpenMetrics names (no _total).
        let metadata = dechunked(try XCTUnwrap(httpGet(port: promPort, path: "/api/v1/targets/metadata?metric=jackvu_xruns")))
        XCTAssertTrue(metadata.contains("\"type\":\"counter\""), "Prometheus read the OpenMetrics families: \(metadata.prefix(400))")
    }

    /// Bad `--metrics` addresses: one line each, and the documented status (64 a malformed
    /// address, 68 a host that does not resolve, 71 a port in use).
    func testBadMetricsAddresses() throws {
        let server = try JackServer(label: "prombad")
        let busy = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(busy) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(busy, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        listen(busy, 1)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(busy, $0, &length) } }
        let inUse = Int(UInt16(bigEndian: address.sin_port))
        for (value, status, words) in [("90000", Int32(64), "--metrics"), ("no-such-host.invalid:9100", 68, "does not resolve"), ("\(inUse)", 71, "--metrics: cannot listen")] {
            let r = try Executables.run(try Executables.product("jackvu"), ["--quiet", "--metrics", value], environment: server.environment)
            XCTAssertEqual(r.status, status, "--metrics \(value): \(r.stderr)")
            let lines = r.stderr.split(separator: "\n")
            XCTAssertEqual(lines.count, 1, r.stderr)
            XCTAssertTrue(r.stderr.hasPrefix("jackvu: ") && r.stderr.contains(words), "--metrics \(value): \(r.stderr)")
        }
    }

    /// Across machines: two network namespaces as two hosts, each with its own JACK server,
    /// tone and jackvu (`--metrics 0.0.0.0:PORT`), joined to this one by veth pairs; the
    /// Prometheus here scrapes both over that network and reads each one's loudness.
    func testPrometheusScrapesTwoHostsOverTheNetwork() throws {
        guard getuid() == 0 else { throw skipOrFail("network namespaces need root (CI and Tools/test.sh as root run this)") }
        let tag = String(getpid() % 10000)
        let hosts = [(ns: "jvpa\(tag)", link: "jva\(tag)", net: "10.213.1"), (ns: "jvpb\(tag)", link: "jvb\(tag)", net: "10.213.2")]
        func ip(_ arguments: [String]) throws {
            let r = try Executables.run("ip", arguments)
            if r.status != 0 { throw FixtureError("ip \(arguments.joined(separator: " ")): \(r.stderr)") }
        }
        var processes: [BackgroundProcess] = []
        defer {
            processes.reversed().forEach { $0.stop() }
            for h in hosts { _ = try? Executables.run("ip", ["netns", "del", h.ns]) }
        }
        let port = freeTCPPort()
        for h in hosts {
            try ip(["netns", "add", h.ns])
            try ip(["link", "add", h.link + "h", "type", "veth", "peer", "name", h.link + "n"])
            try ip(["link", "set", h.link + "n", "netns", h.ns])
            try ip(["addr", "add", h.net + ".1/24", "dev", h.link + "h"])
            try ip(["link", "set", h.link + "h", "up"])
            try ip(["netns", "exec", h.ns, "ip", "addr", "add", h.net + ".2/24", "dev", h.link + "n"])
            try ip(["netns", "exec", h.ns, "ip", "link", "set", h.link + "n", "up"])
            try ip(["netns", "exec", h.ns, "ip", "link", "set", "lo", "up"])
            // The host's JACK server, tone and jackvu, all inside its namespace.
            let server = "jvp\(h.ns)"
            let environment = ["JACK_DEFAULT_SERVER": server, "JACK_NO_AUDIO_RESERVATION": "1"]
            processes.append(try BackgroundProcess(
                "/usr/sbin/ip", ["netns", "exec", h.ns, "jackd", "-n", server, "--no-realtime", "-d", "dummy", "-r", "48000", "-p", "256"],
                environment: environment, label: "jackd-\(h.ns)"))
            XCTAssertNotNil(waitFor(timeout: 20) { (try? Executables.run("ip", ["netns", "exec", h.ns, "jack_lsp"], environment: environment))?.status == 0 },
                            "jackd in \(h.ns)")
            processes.append(try BackgroundProcess(
                "/usr/sbin/ip", ["netns", "exec", h.ns, try Executables.product("jacktone"), "--freq", "997", "--level", "-20"],
                environment: environment, label: "jacktone-\(h.ns)"))
            XCTAssertNotNil(waitFor(timeout: 20) {
                (try? Executables.run("ip", ["netns", "exec", h.ns, "jack_lsp"], environment: environment))?.stdout.contains("jacktone:out") ?? false
            })
            processes.append(try BackgroundProcess(
                "/usr/sbin/ip",
                ["netns", "exec", h.ns, try Executables.product("jackvu"), "--channels", "1", "--connect", "jacktone:out", "--quiet",
                 "--metrics", "0.0.0.0:\(port)"],
                environment: environment, label: "jackvu-\(h.ns)"))
        }
        let (prometheus, promPort) = try startPrometheus(targets: hosts.map { "\($0.net).2:\(port)" })
        processes.append(prometheus)
        let both = waitFor(timeout: 40) {
            let r = query(promPort, "jackvu_short_term_loudness_lufs")
            return r.count == 2 && r.allSatisfy { abs($0.value - -23) <= 0.2 }
        }
        XCTAssertNotNil(both, "both hosts' loudness over the veth network: \(query(promPort, "up")) \(processes.map(\.stderr))")
        XCTAssertEqual(Set(query(promPort, "up{job=\"jackvu\"} == 1").compactMap { $0.labels["instance"] }),
                       Set(hosts.map { "\($0.net).2:\(port)" }))
    }
}

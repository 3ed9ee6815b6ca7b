#if canImport(Glibc)
import Glibc
#endif
import Outputs
import Vocabulary

/// `jackvu-probe`: measures a running jackvu from outside, for BENCHMARKS.md — how late its OSC
/// bundles arrive, what a browser reads from its WebSocket, its threads' CPU, and how long a
/// level step takes to reach its meter port (two JACK clients of its own). Build with
/// `-c release`.
@main
enum Probe {
    static func main() {
        let args = Array(CommandLine.arguments.dropFirst())
        switch args.first {
        case "osc-latency":
            oscLatency(port: args.count > 1 ? UInt16(args[1]) ?? 9000 : 9000, seconds: args.count > 2 ? Double(args[2]) ?? 20 : 20)
        case "ws-read":
            webSocketRead(port: args.count > 1 ? UInt16(args[1]) ?? 8080 : 8080, seconds: args.count > 2 ? Double(args[2]) ?? 20 : 20)
        case "meter-latency":
            MeterLatency.run(client: args.count > 1 ? args[1] : "jackvu", trials: args.count > 2 ? Int(args[2]) ?? 20 : 20)
        case "threads":
            threadCPU(pid: args.count > 1 ? Int32(args[1]) ?? 0 : 0, seconds: args.count > 2 ? Double(args[2]) ?? 20 : 20)
        default:
            print("usage: jackvu-probe osc-latency PORT [SECONDS] | ws-read PORT [SECONDS] | threads PID [SECONDS] | meter-latency CLIENT [TRIALS]")
            exit(args.isEmpty ? 0 : 64)
        }
    }

    /// Receives jackvu's OSC bundles on 127.0.0.1:`port` for `seconds` and prints how long
    /// after its time tag (the capture time of the last analysed frame) each arrived.
    static func oscLatency(port: UInt16, seconds: Double) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        _ = loopback(port) { bind(fd, $0, $1) }
        var tv = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 65536)
        var delays: [Double] = []
        var lastTag: UInt64 = 0
        let end = monotonicSeconds() + seconds
        while monotonicSeconds() < end {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n >= 16 else { continue }
            var ts = timespec()
            clock_gettime(CLOCK_REALTIME, &ts)
            guard let tag = OSCDecoder.timeTag(of: Array(buffer[0..<n])), tag != lastTag else { continue }
            lastTag = tag  // the first datagram of each update
            let tagSeconds = Double(tag >> 32) - 2_208_988_800 + Double(tag & 0xFFFF_FFFF) / 4_294_967_296
            delays.append((Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9 - tagSeconds) * 1000)
        }
        close(fd)
        guard !delays.isEmpty else { print("no OSC bundles received on port \(port)"); return }
        delays.sort()
        let median = delays[delays.count / 2], p99 = delays[min(delays.count - 1, Int(Double(delays.count) * 0.99))]
        print("OSC over UDP, time tag (capture of the last analysed frame) to arrival: \(delays.count) updates, median \(fmt(median)) ms, p99 \(fmt(p99)) ms, max \(fmt(delays.last!)) ms")
    }

    /// `body` (bind, connect) with 127.0.0.1:`port` as a socket address and its size.
    static func loopback(_ port: UInt16, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = port.bigEndian
        return withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    }

    static func fmt(_ x: Double) -> String {
        let scaled = (x * 100).rounded() / 100
        return String(scaled)
    }
}

// MARK: Displays

extension Probe {
    /// A browser's share: opens the WebSocket of jackvu's browser display on 127.0.0.1:`port`,
    /// reads everything for `seconds`, and prints bytes and messages per second.
    static func webSocketRead(port: UInt16, seconds: Double) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let ok = loopback(port) { connect(fd, $0, $1) }
        guard ok == 0 else {
            print("ws-read: cannot connect to 127.0.0.1:\(port)")
            exit(69)
        }
        let request = "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        _ = request.withCString { Glibc.send(fd, $0, strlen($0), 0) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // Skip the response head, then parse frame headers to count messages.
        var pending: [UInt8] = []
        var headDone = false
        var bytes = 0, messages = 0, binary = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let start = monotonicSeconds()
        while monotonicSeconds() - start < seconds {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { break }
            if n < 0 { continue }
            pending += buffer[0..<n]
            if !headDone {
                guard let end = pending.indices.dropLast(3).first(where: {
                    pending[$0] == 13 && pending[$0 + 1] == 10 && pending[$0 + 2] == 13 && pending[$0 + 3] == 10
                }) else { continue }
                pending.removeFirst(end + 4)
                headDone = true
            }
            bytes += n
            while pending.count >= 2 {
                var length = Int(pending[1] & 0x7F), header = 2
                if length == 126 {
                    guard pending.count >= 4 else { break }
                    length = Int(pending[2]) << 8 | Int(pending[3]); header = 4
                } else if length == 127 {
                    guard pending.count >= 10 else { break }
                    length = (2..<10).reduce(0) { $0 << 8 | Int(pending[$1]) }; header = 10
                }
                guard pending.count >= header + length else { break }
                if pending[0] & 0x0F == 2 { binary += header + length }  // the pictures' frames
                pending.removeFirst(header + length)
                messages += 1
            }
        }
        let elapsed = monotonicSeconds() - start
        close(fd)
        print("browser WebSocket: \(Int(Double(bytes) / elapsed)) bytes/s, \(fixed(Double(messages) / elapsed, 1)) messages/s, "
            + "\(messages > 0 ? bytes / messages : 0) bytes/message over \(fixed(elapsed, 1)) s; "
            + "of them binary (the pictures) \(Int(Double(binary) / elapsed)) bytes/s")
    }

    /// CPU time of each of a process's threads over `seconds`, by thread name, in ms per second
    /// (from /proc/PID/task/*/schedstat, in nanoseconds; where that is missing, from
    /// /proc/PID/task/*/stat, which the kernel counts in ticks of 10 ms).
    static func threadCPU(pid: Int32, seconds: Double) {
        func sample() -> [String: Double] {
            var out: [String: Double] = [:]
            guard let dir = opendir("/proc/\(pid)/task") else { return out }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                guard Int(name) != nil, let stat = readText("/proc/\(pid)/task/\(name)/stat") else { continue }
                guard let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { continue }
                var comm = String(stat[stat.index(after: open)..<close])
                if comm.hasPrefix("NIO-") { comm = "NIO event loops" }
                if comm.hasSuffix("qos") || comm.hasSuffix("overcommit") { comm = "Swift concurrency pool" }
                if let sched = readText("/proc/\(pid)/task/\(name)/schedstat"),
                   let ns = sched.split(separator: " ").first.flatMap({ Double($0) })
                {
                    out[comm, default: 0] += ns / 1e6
                    continue
                }
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                // Fields after the name: state is 0, utime 11, stime 12.
                let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
                out[comm, default: 0] += ticks * 1000 / Double(sysconf(Int32(_SC_CLK_TCK)))
            }
            return out
        }
        let a = sample()
        usleep(UInt32(seconds * 1e6))
        let b = sample()
        print("thread CPU over \(fixed(seconds, 0)) s, ms per second:")
        for name in b.keys.sorted() {
            print("  \(name): \(fixed(((b[name] ?? 0) - (a[name] ?? 0)) / seconds, 2))")
        }
    }

    static func readText(_ path: String) -> String? {
        guard let f = fopen(path, "r") else { return nil }
        defer { fclose(f) }
        var out = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&buffer, 1, buffer.count, f)
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func monotonicSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}

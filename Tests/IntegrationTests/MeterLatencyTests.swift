import Foundation
import TestSupport
import XCTest

/// A level step at jackvu's input reaches its meter port within two periods (median, on the
/// server's frame clock, 256-frame periods): a JACK client (`jackvu-probe meter-latency`, two
/// clients in one process) plays the step and watches the port. Before the meters published
/// per period, the delay was a hop and more (1280 frames, 5 periods). (VU, PPM, K and
/// loudness add their own standard rise times: BENCHMARKS.md.)
final class MeterLatencyTests: XCTestCase {
    func testALevelStepReachesTheMeterPortWithinTwoPeriods() throws {
        let server = try JackServer(label: "latency")
        for meter in ["rms", "peak", "truepeak"] {
            let vu = try BackgroundProcess(
                try Executables.product("jackvu"), ["--channels", "1", "--quiet", "--fall", "1000", "--meter", meter],
                environment: server.environment, label: "jackvu-\(meter)")
            try waitForPortsListed(server, ["jackvu:meter_1"])
            let result = try Executables.run(
                try Executables.product("jackvu-probe"), ["meter-latency", "jackvu", "15"], environment: server.environment, timeout: 120)
            XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
            let summary = try XCTUnwrap(result.stdout.split(separator: "\n").last { $0.hasPrefix("median ") }, result.stdout)
            let median = try XCTUnwrap(Int(summary.split(separator: " ")[1]), String(summary))
            print("--meter \(meter): \(summary)")
            XCTAssertLessThanOrEqual(median, 2 * server.period, "--meter \(meter): \(result.stdout)")
            XCTAssertGreaterThanOrEqual(median, server.period, "a step cannot show in its own cycle: \(result.stdout)")
            XCTAssertEqual(vu.stop(signal: SIGTERM), 0, vu.stderr)
        }
    }
}

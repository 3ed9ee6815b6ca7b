// swift-tools-version: 6.0
//
// jackvu — a headless JACK meter and analyser.
// Module graph (see README.md, "How it works"):
//   CJack, CFFTW, CSndfile, CMpg123 — system libraries found by pkg-config, each with a small shim header
//   DSP           — pure signal processing (CFFTW)
//   DSPAVX2       — DSP's kernels compiled for AVX2, called only where the machine has it
//   CRealtime     — a C shim: sem_clockwait on CLOCK_MONOTONIC, posix_spawn's closefrom
//   Realtime      — lock-free ring and publishers shared with the JACK thread (Synchronization);
//                   the one semaphore wait with a deadline (monotonic) and the one
//                   newest-value mailbox (NewestValue) the slow outputs' threads take from
//   Jack          — small safe wrapper of libjack; the only module that imports CJack
//   CLiblo        — liblo (OSC), found by pkg-config
//   Vocabulary    — what every layer speaks (DSP beneath it only): the snapshot every output
//                   reads, the reading table (Readings.swift: every reading's kind, unit,
//                   analysis, OSC and JSON form and display, and --meter's scales), the message
//                   kinds, the alarms' kinds, rules, engine and board, the display scale and how
//                   numbers print
//   Outputs       — from the vocabulary, the OSC address space, oscdump-style text and JSON
//                   lines; OSC bundles over UDP and the OSC control input (liblo); knows nothing
//                   of JACK; also the `Display` interface the displays implement (re-exports
//                   Vocabulary)
//   TerminalDisplay — the terminal screen (--tui): layout as pure functions of a snapshot, then
//                   the terminal I/O with plain escape sequences (no terminal library)
//   WebDisplay    — the browser display (--http): Hummingbird + WebSocket, the page in the binary;
//                   Hummingbird and SwiftNIO stay inside this module; also the metrics-only
//                   listener (--metrics)
//   MetricsExport — Prometheus metrics from the snapshots (swift-prometheus), for /metrics
//   CSQLite       — SQLite 3 (Debian's libsqlite3), found by pkg-config
//   LoudnessLog   — the loudness and incident log (--log: SQLite, its own thread) and the
//                   compliance reports recomputed from it (`jackvu report`, `analyze --report`)
//   SessionManagement — session managers (the NSM API over liblo): announce, open, save
//   Version       — the version both commands and the packaging scripts report
//   JackVUOptions — the command line's options (argument parser), shared with the in-process form
//   Analysis      — the analysis core: AnalysisSettings, the Analyzer (every meter of a channel
//                   set, fed planar chunks), the channel pool and its lanes; DSP, Realtime and
//                   the vocabulary beneath it only (ModuleBoundaryTests): no outputs, no JACK,
//                   no I/O, no threads but the pool's. jackvu-bench depends on it alone (jackvu-probe
//                   measures a running jackvu from outside)
//   Settings      — Configuration: everything a run is told, the analysis's settings beside the
//                   JACK client's, the outputs', the alarms' and the log's, validated
//   FileAnalysis  — `jackvu analyze`: audio files (libsndfile, plain WAV read directly)
//                   through the Analysis to its consumers, summaries; the fuzzers' file entry point
//   Consumers     — what takes the analysis's results, for every host (the command, the
//                   in-process client, `jackvu analyze`, the LV2 plugin): the observers (alarms,
//                   --on-alarm, the log, MIDI notes, the history) and the outputs (stdout, OSC
//                   over UDP, the osc port, a file's stream), each list built by one factory from
//                   what the host asks for; knows no host (no JACK, no LV2, no file reading)
//   JackVU        — the live engine: Jack → ring → worker → snapshot → outputs (the connection
//                   keeper the JACK side over a run)
//   JackVUInternal — the engine as a JACK internal client (jackvu.so for jack_load)
//   CLV2, LV2Description, JackVULV2 — the analysis as an LV2 plugin (lv2-dev's headers; the
//                   forms and ports from the reading table; the plugin: ring, worker, atomics);
//                   CLilv — lilv, for the tests' LV2 host (Tools/jackvu-lv2-host)
//   jackvu        — the command line
import PackageDescription

let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")

// DSPAVX2's code generation: Haswell's instructions (x86-64-v3) on x86-64; elsewhere the
// baseline (MachineFeatures never calls it there).
#if arch(x86_64)
let avx2Flags = ["-O", "-target-cpu", "haswell"]
#else
let avx2Flags = ["-O"]
#endif

let package = Package(
    name: "jackvu",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "jackvu", targets: ["jackvu"]),
        .executable(name: "jacktone", targets: ["jacktone"]),
        .executable(name: "jackvu-bench", targets: ["jackvu-bench"]),
        .executable(name: "jackvu-probe", targets: ["jackvu-probe"]),
        // jackvu as a JACK internal client (jack_load): install as JACK's jackvu.so.
        .library(name: "JackVUInternal", type: .dynamic, targets: ["JackVUInternal"]),
        // jackvu as an LV2 plugin: Tools/lv2.sh makes the bundle (jackvu.lv2/) of this library
        // and the Turtle jackvu-lv2-ttl writes from the reading table.
        .library(name: "JackVULV2", type: .dynamic, targets: ["JackVULV2"]),
        .executable(name: "jackvu-lv2-ttl", targets: ["jackvu-lv2-ttl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.5.0"),
        // Hummingbird's own foundation, declared because WebDisplay imports NIOCore directly.
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        // The Prometheus exposition of /metrics (the MetricsExport target).
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CJack", path: "Sources/CJack", pkgConfig: "jack",
            providers: [.apt(["libjack-jackd2-dev"])]),
        .systemLibrary(
            name: "CFFTW", path: "Sources/CFFTW", pkgConfig: "fftw3f",
            providers: [.apt(["libfftw3-dev"])]),
        .systemLibrary(
            name: "CLiblo", path: "Sources/CLiblo", pkgConfig: "liblo",
            providers: [.apt(["liblo-dev"])]),
        .systemLibrary(
            name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CSndfile", path: "Sources/CSndfile", pkgConfig: "sndfile",
            providers: [.apt(["libsndfile1-dev"])]),
        // MPEG audio decoded by jackvu itself (libsndfile's decoder lets libmpg123 write to stderr).
        .systemLibrary(
            name: "CMpg123", path: "Sources/CMpg123", pkgConfig: "libmpg123",
            providers: [.apt(["libmpg123-dev"])]),
        .systemLibrary(
            name: "CLV2", path: "Sources/CLV2", pkgConfig: "lv2",
            providers: [.apt(["lv2-dev"])]),
        .systemLibrary(
            name: "CLilv", path: "Sources/CLilv", pkgConfig: "lilv-0",
            providers: [.apt(["liblilv-dev"])]),
        // DSP is optimised in every configuration: its SIMD and filter loops run 10-50× slower
        // unoptimised, and the tests push hours of audio through them.
        .target(name: "DSP", dependencies: ["CFFTW", "DSPAVX2"], swiftSettings: [.unsafeFlags(["-O"])]),
        // Kernels compiled for AVX2 (see the module's file): DSP calls them only on a machine
        // that has it (MachineFeatures).
        .target(name: "DSPAVX2", swiftSettings: [.unsafeFlags(avx2Flags)]),
        // sem_clockwait (monotonic deadlines), which Swift's Glibc module does not show.
        .target(name: "CRealtime"),
        .target(name: "Realtime", dependencies: ["CRealtime"]),
        .target(name: "Jack", dependencies: ["CJack", "Realtime"]),
        // The vocabulary every layer speaks: the snapshot, the reading table and its units and
        // scales, the message kinds, the alarms' kinds and board, and how numbers print.
        .target(name: "Vocabulary", dependencies: ["DSP"]),
        .target(name: "Outputs", dependencies: ["DSP", "Realtime", "CLiblo", "Vocabulary"]),
        .target(name: "TerminalDisplay", dependencies: ["DSP", "Outputs", "Realtime"]),
        .target(
            name: "WebDisplay",
            dependencies: [
                "Outputs", "Realtime", "MetricsExport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // The page, as files; embedded in the binary (Page.swift puts them together).
            resources: [.embedInCode("Page/page.html"), .embedInCode("Page/page.css"), .embedInCode("Page/page.js")]),
        // Prometheus metrics from the snapshots (/metrics on --http and --metrics).
        .target(
            name: "MetricsExport",
            dependencies: ["Outputs", "DSP", "Realtime", "Version", .product(name: "Prometheus", package: "swift-prometheus")]),
        .target(name: "SessionManagement", dependencies: ["CLiblo", "Realtime"]),
        .target(name: "Version"),
        // The analysis: no JACK, no I/O, no threads but the channel pool's.
        // The analysis core: DSP, the real-time helpers and the vocabulary only (no outputs, no C
        // library but FFTW through DSP).
        // Optimised in every configuration too, as DSP is: its per-channel glue around the DSP
        // (`jackvu-bench meters`' `rms` alone: 0.37 ms of CPU per second per channel
        // unoptimised, 0.10 optimised) is what the suite's scale test asks of the workers.
        .target(name: "Analysis", dependencies: ["DSP", "Realtime", "Vocabulary"], swiftSettings: [.unsafeFlags(["-O"])]),
        // Everything a run is told (`Configuration`): the analysis's settings beside the client's,
        // the outputs', the alarms' and the log's.
        .target(name: "Settings", dependencies: ["Analysis", "DSP", "Outputs", "Vocabulary"]),
        .target(name: "FileAnalysis", dependencies: ["Analysis", "Consumers", "Settings", "DSP", "Realtime", "Outputs", "CSndfile", "CMpg123", "LoudnessLog", "Version"]),
        // The loudness and incident log (SQLite) and the reports made from it.
        .target(name: "LoudnessLog", dependencies: ["Analysis", "CSQLite", "DSP", "Outputs", "Realtime"]),
        // What takes the analysis's results, for every host: the observers (alarms, the log,
        // the notes, the history) and the outputs, each list built by one factory.
        .target(name: "Consumers", dependencies: ["Analysis", "Settings", "DSP", "Realtime", "CRealtime", "Outputs", "LoudnessLog"]),
        .target(name: "JackVU", dependencies: ["Analysis", "Consumers", "Settings", "DSP", "Realtime", "CRealtime", "Jack", "Outputs", "LoudnessLog"]),
        .target(name: "JackVUOptions", dependencies: ["Analysis", "Settings", "Outputs", "DSP", "Version", argumentParser]),
        // The Swift runtime linked in: jackd loads the library with no Swift of its own. Never
        // unmapped (-z nodelete): the runtime leaves thread-local destructors in jackd's
        // threads, which ran into an unloaded library when jackd exited.
        .target(
            name: "JackVUInternal", dependencies: ["Jack", "Analysis", "Settings", "JackVU", "JackVUOptions", "Outputs", "Realtime", "Version"],
            linkerSettings: [.unsafeFlags(["-static-stdlib", "-l_FoundationCollections", "-l_FoundationCShims", "-Xlinker", "-z", "-Xlinker", "nodelete"])]),
        // The LV2 plugin's forms and ports, from the reading table; the plugin (the Swift
        // runtime linked in, only lv2_descriptor exported, never unmapped: as JackVUInternal).
        .target(name: "LV2Description", dependencies: ["DSP", "Outputs"]),
        .target(
            name: "JackVULV2", dependencies: ["Analysis", "CLV2", "Consumers", "DSP", "LoudnessLog", "LV2Description", "Outputs", "Realtime"],
            exclude: ["exports.map"],
            linkerSettings: [.unsafeFlags([
                "-static-stdlib", "-l_FoundationCollections", "-l_FoundationCShims", "-Xlinker", "-z", "-Xlinker", "nodelete",
                "-Xlinker", "--version-script=Sources/JackVULV2/exports.map",
            ])]),
        .executableTarget(name: "jackvu-lv2-ttl", dependencies: ["LV2Description"], path: "Tools/jackvu-lv2-ttl"),
        // A small lilv host of the tests: bundles discovered, described and instantiated through
        // lilv as hosts do, files run through instances side by side offline, the control
        // outputs printed (LV2Tests).
        .executableTarget(name: "jackvu-lv2-host", dependencies: ["CLilv", "CLV2", "CSndfile", "LV2Description"], path: "Tools/jackvu-lv2-host"),
        .executableTarget(
            name: "jackvu",
            dependencies: [
                "Analysis", "Settings", "FileAnalysis", "JackVU", "JackVUOptions", "Outputs", "TerminalDisplay", "WebDisplay", "SessionManagement", "LoudnessLog",
                "Version", "MetricsExport", "Realtime", argumentParser,
            ]),
        .target(name: "ToneSynth", path: "Tools/ToneSynth"),
        .executableTarget(
            name: "jacktone", dependencies: ["Jack", "Realtime", "ToneSynth", "SessionManagement", "Version", argumentParser],
            path: "Tools/jacktone"),
        // The fuzzers of untrusted inputs (libFuzzer with -sanitize=fuzzer -DFUZZING; a replayer
        // of files otherwise): see Tools/test.sh and FuzzTests.
        .executableTarget(name: "jackvu-fuzz", dependencies: ["FileAnalysis", "JackVUOptions", "LoudnessLog", "Outputs"], path: "Tools/jackvu-fuzz"),
        .executableTarget(
            name: "jackvu-bench", dependencies: ["DSP", "Analysis", "Vocabulary"],
            path: "Tools/jackvu-bench"),
        // A running jackvu measured from outside (OSC latency, WebSocket bytes, thread CPU, the
        // meter port's latency through JACK).
        .executableTarget(
            name: "jackvu-probe", dependencies: ["Jack", "Outputs", "Vocabulary"],
            path: "Tools/jackvu-probe"),
        // Helpers for tests that run real processes (jackd, jacktone, oscdump); no mocks.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "DSPTests", dependencies: ["DSP", "TestSupport"]),
        .testTarget(name: "RealtimeTests", dependencies: ["Realtime"]),
        .testTarget(name: "OutputsTests", dependencies: ["Outputs", "MetricsExport", "DSP", "Version", "TestSupport", "LoudnessLog"]),
        .testTarget(name: "AnalysisTests", dependencies: ["Analysis", "Settings", "FileAnalysis", "DSP", "Outputs", "TestSupport"]),
        .testTarget(name: "TerminalDisplayTests", dependencies: ["TerminalDisplay", "Outputs", "DSP"]),
        .testTarget(name: "ToneSynthTests", dependencies: ["ToneSynth"]),
        .testTarget(name: "IntegrationTests", dependencies: ["TestSupport", "Outputs", "CLiblo", "CSndfile", "LoudnessLog", "DSP", "Jack", "LV2Description"]),
        .testTarget(name: "SessionTests", dependencies: ["SessionManagement"]),
    ]
)

// jackvu-lv2-host: a small LV2 host of the tests. It loads plugin libraries as every host
// does (dlopen, `lv2_descriptor`, `instantiate` with the urid:map feature, `connect_port`,
// `run`), runs audio files through instances side by side in one process, block by block and
// as fast as it can (offline), and prints each instance's control outputs as a JSON line. Two
// instances of one library, or of two bundles' libraries, can run together; it is itself a
// Swift program (the Swift runtime loaded dynamically), so the plugin's own runtime (linked
// statically inside it) is tried beside another.
//
//   jackvu-lv2-host [--set SYMBOL=VALUE]... [--block FRAMES] [--times] [--json PATH] [--log PATH]
//                   [--random-events SEED] [--state] LIBRARY URI FILE [LIBRARY URI FILE]...
//
// --json PATH and --log PATH set the plugin's JSON lines file and loudness log as a host's
// generic UI does: a `patch:Set` of the parameter to an `atom:Path` on the control port, in
// the first run(). --random-events SEED fills the control port's sequence with pseudo-random
// events before each run() (random sizes, types and bodies, objects with patch:Set's keys),
// for the plugin's event reader to survive. --state asks each instance for its LV2 state
// after the run (`state:interface`'s save) and prints what it stored, by key, as "state" in
// its line (paths as stored: this host maps none).
//
// With --times each JSON line also carries what the host measured (BENCHMARKS.md): the wall
// time `instantiate` took, and `run()`'s own cost on the host's thread (its thread CPU clock
// around each call) per call and per second of audio per channel; and the CPU of the
// process's other threads (the plugins' workers: one instance, alone, is its worker's)
// per second of audio per channel.
//
// The ports are jackvu's (`LV2Description`, from which the plugin's Turtle is written): this
// host runs jackvu's plugin only. Exit 64 for a usage error, 66 for a file or library it
// cannot open, 65 for a file whose channels do not fit the form.
#if canImport(Glibc)
import Glibc
#endif
import CLV2
import CSndfile
import LV2Description

func fail(_ message: String, _ status: Int32) -> Never {
    let line = "jackvu-lv2-host: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(status)
}

// MARK: urid:map, the one feature the plugin asks for

/// The URIs mapped so far (URID k + 1 is `mapped[k]`); only `instantiate` maps, on this thread.
nonisolated(unsafe) var mapped: [String] = []
/// What a state save stored (key URI, value), on this thread.
nonisolated(unsafe) var stored: [(String, String)] = []

let mapURI: @convention(c) (LV2_URID_Map_Handle?, UnsafePointer<CChar>?) -> LV2_URID = { _, uri in
    guard let uri else { return 0 }
    let s = String(cString: uri)
    if let k = mapped.firstIndex(of: s) { return LV2_URID(k + 1) }
    mapped.append(s)
    return LV2_URID(mapped.count)
}

// MARK: The command line

var settings: [(String, Float)] = []
var block = 1024
var times = false
/// --random-events' generator state (0: off).
nonisolated(unsafe) var randomEvents: UInt64 = 0
/// The paths --json and --log set (parameter URI, path).
nonisolated(unsafe) var pathSettings: [(String, String)] = []
var saveState = false
var triples: [(library: String, uri: String, file: String)] = []
var args = Array(CommandLine.arguments.dropFirst())
var positional: [String] = []
while !args.isEmpty {
    let a = args.removeFirst()
    switch a {
    case "--set":
        guard let s = args.first, let eq = s.firstIndex(of: "="), let v = Float(s[s.index(after: eq)...]) else {
            fail("--set takes SYMBOL=VALUE", 64)
        }
        args.removeFirst()
        settings.append((String(s[..<eq]), v))
    case "--block":
        guard let s = args.first, let n = Int(s), (1...65536).contains(n) else { fail("--block takes 1 to 65536 frames", 64) }
        args.removeFirst()
        block = n
    case "--times":
        times = true
    case "--json", "--log":
        guard let s = args.first else { fail("\(a) takes a path", 64) }
        args.removeFirst()
        pathSettings.append((a == "--json" ? LV2Description.jsonParameter : LV2Description.logParameter, s))
    case "--state":
        saveState = true
    case "--random-events":
        guard let s = args.first, let seed = UInt64(s), seed > 0 else { fail("--random-events takes a seed above 0", 64) }
        args.removeFirst()
        randomEvents = seed
    case "-h", "--help":
        print("usage: jackvu-lv2-host [--set SYMBOL=VALUE]... [--block FRAMES] [--times] [--json PATH] [--log PATH] [--random-events SEED] [--state] LIBRARY URI FILE [LIBRARY URI FILE]...")
        exit(0)
    default:
        positional.append(a)
    }
}
guard !positional.isEmpty, positional.count % 3 == 0 else {
    fail("usage: jackvu-lv2-host [--set SYMBOL=VALUE]... [--block FRAMES] [--times] [--json PATH] [--log PATH] [--random-events SEED] [--state] LIBRARY URI FILE [LIBRARY URI FILE]...", 64)
}
for k in stride(from: 0, to: positional.count, by: 3) { triples.append((positional[k], positional[k + 1], positional[k + 2])) }

// MARK: The instances

typealias DescriptorFunction = @convention(c) (UInt32) -> UnsafePointer<LV2_Descriptor>?

/// Seconds on `clock`.
func seconds(_ clock: clockid_t) -> Double {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// One plugin instance, its file and its port buffers.
final class Instance {
    let library: String, uri: String, path: String
    let descriptor: UnsafePointer<LV2_Descriptor>
    let handle: LV2_Handle
    let ports: [LV2Description.Port]
    let file: OpaquePointer
    let channels: Int
    let rate: Int
    var frames = 0
    var ended = false
    /// `instantiate`'s wall time, and `run()`'s calls and thread CPU time (s).
    var instantiateSeconds = 0.0
    var runCalls = 0
    var runSeconds = 0.0
    let interleaved: UnsafeMutablePointer<Float>
    let audio: [UnsafeMutablePointer<Float>]
    let controls: UnsafeMutablePointer<Float>
    /// The control port's atom sequence (8-byte aligned): a `patch:Set` for the first run()
    /// with --json, empty after.
    let sequence = UnsafeMutableRawPointer.allocate(byteCount: 8192, alignment: 8)

    init(library: String, uri: String, path: String, features: UnsafePointer<UnsafePointer<LV2_Feature>?>, block: Int,
         settings: [(String, Float)]) {
        (self.library, self.uri, self.path) = (library, uri, path)
        guard let form = LV2Description.forms.first(where: { $0.uri == uri }) else { fail("\(uri) is not a jackvu plugin URI", 64) }
        ports = LV2Description.ports(form)
        var info = SF_INFO()
        guard let file = sf_open(path, Int32(SFM_READ), &info) else { fail("cannot open '\(path)': \(String(cString: sf_strerror(nil)))", 66) }
        self.file = file
        channels = Int(info.channels)
        rate = Int(info.samplerate)
        guard channels == form.channels else { fail("'\(path)' has \(channels) channels; \(form.name) takes \(form.channels)", 65) }
        // RTLD_LOCAL: each library's symbols stay its own (two bundles' copies side by side).
        guard let lib = dlopen(library, RTLD_NOW | RTLD_LOCAL) else { fail("cannot load '\(library)': \(String(cString: dlerror()))", 66) }
        guard let symbol = dlsym(lib, "lv2_descriptor") else { fail("'\(library)' has no lv2_descriptor", 66) }
        let entry = unsafeBitCast(symbol, to: DescriptorFunction.self)
        var found: UnsafePointer<LV2_Descriptor>?
        var index: UInt32 = 0
        while let d = entry(index) {
            if String(cString: d.pointee.URI) == uri { found = d }
            index += 1
        }
        guard let descriptor = found else { fail("'\(library)' has no plugin \(uri)", 66) }
        self.descriptor = descriptor
        let bundle = String(library[..<(library.lastIndex(of: "/") ?? library.endIndex)]) + "/"
        let started = seconds(CLOCK_MONOTONIC)
        guard let handle = descriptor.pointee.instantiate(descriptor, Double(rate), bundle, features) else {
            fail("\(uri) refused to instantiate at \(rate) Hz", 65)
        }
        instantiateSeconds = seconds(CLOCK_MONOTONIC) - started
        self.handle = handle
        interleaved = .allocate(capacity: block * channels)
        audio = (0..<(2 * channels)).map { _ in .allocate(capacity: block) }
        controls = .allocate(capacity: ports.count)
        for p in ports {
            controls[p.index] = Float(p.defaultValue)
            for (symbol, value) in settings where symbol == p.symbol { controls[p.index] = value }
            switch p.kind {
            case .audioIn(let c): descriptor.pointee.connect_port(handle, UInt32(p.index), audio[c])
            case .audioOut(let c): descriptor.pointee.connect_port(handle, UInt32(p.index), audio[channels + c])
            case .transport:
                Instance.writeSequence(sequence, setting: pathSettings)
                descriptor.pointee.connect_port(handle, UInt32(p.index), sequence)
            default: descriptor.pointee.connect_port(handle, UInt32(p.index), controls + p.index)
            }
        }
        for (symbol, _) in settings where !ports.contains(where: { $0.symbol == symbol }) { fail("\(uri) has no port '\(symbol)'", 64) }
        descriptor.pointee.activate?(handle)
    }

    /// Reads and runs the next block; false at the file's end.
    func step(_ block: Int) -> Bool {
        guard !ended else { return false }
        let n = Int(sf_readf_float(file, interleaved, sf_count_t(block)))
        guard n > 0 else {
            ended = true
            return false
        }
        for i in 0..<n { for c in 0..<channels { audio[c][i] = interleaved[i * channels + c] } }
        let before = seconds(CLOCK_THREAD_CPUTIME_ID)
        descriptor.pointee.run(handle, UInt32(n))
        runSeconds += seconds(CLOCK_THREAD_CPUTIME_ID) - before
        if runCalls == 0 { Instance.writeSequence(sequence, setting: []) }
        if randomEvents != 0 { Instance.writeRandomEvents(sequence) }
        runCalls += 1
        frames += n
        return true
    }

    /// The control outputs as a JSON line, after a run of 0 frames that only updates them.
    func report(times: Bool) -> String {
        descriptor.pointee.run(handle, 0)
        var fields: [String] = []
        for p in ports {
            switch p.kind {
            case .reading, .alarm, .alarmsActive:
                let v = controls[p.index]
                fields.append("\"\(p.symbol)\": " + (v.isFinite ? "\(v)" : "null"))
            default: break
            }
        }
        var measured = ""
        if times {
            let audioSeconds = Double(frames) / Double(rate)
            measured = ", \"instantiate_ms\": \(instantiateSeconds * 1000), \"run_calls\": \(runCalls)"
                + ", \"run_us_per_call\": \(runSeconds / Double(max(1, runCalls)) * 1e6)"
                + ", \"run_ms_per_second_per_channel\": \(runSeconds / max(1e-9, audioSeconds) / Double(channels) * 1000)"
        }
        return "{\"library\": \"\(library)\", \"uri\": \"\(uri)\", \"file\": \"\(path)\", \"frames\": \(frames)" + measured
            + ", \"ports\": {" + fields.joined(separator: ", ") + "}}"
    }

    /// An atom sequence (LV2 atom layout, each atom padded to 8 bytes): an event at frame 0
    /// for each setting, a `patch:Set` object of the parameter to the path (none: empty).
    static func writeSequence(_ b: UnsafeMutableRawPointer, setting paths: [(String, String)]) {
        func id(_ uri: String) -> UInt32 { mapURI(nil, uri) }
        var at = 16
        for (parameter, path) in paths {
            let bytes = Array(path.utf8) + [0]
            let pathPadded = (bytes.count + 7) & ~7
            let objectBody = 8 + (16 + 8) + (16 + pathPadded)
            b.storeBytes(of: 0, toByteOffset: at, as: Int64.self)  // frame 0
            b.storeBytes(of: UInt32(objectBody), toByteOffset: at + 8, as: UInt32.self)
            b.storeBytes(of: id("http://lv2plug.in/ns/ext/atom#Object"), toByteOffset: at + 12, as: UInt32.self)
            var o = at + 16
            b.storeBytes(of: 0, toByteOffset: o, as: UInt32.self)  // id
            b.storeBytes(of: id("http://lv2plug.in/ns/ext/patch#Set"), toByteOffset: o + 4, as: UInt32.self)
            o += 8
            b.storeBytes(of: id("http://lv2plug.in/ns/ext/patch#property"), toByteOffset: o, as: UInt32.self)
            b.storeBytes(of: 0, toByteOffset: o + 4, as: UInt32.self)
            b.storeBytes(of: 4, toByteOffset: o + 8, as: UInt32.self)
            b.storeBytes(of: id("http://lv2plug.in/ns/ext/atom#URID"), toByteOffset: o + 12, as: UInt32.self)
            b.storeBytes(of: id(parameter), toByteOffset: o + 16, as: UInt32.self)
            b.storeBytes(of: 0, toByteOffset: o + 20, as: UInt32.self)
            o += 24
            b.storeBytes(of: id("http://lv2plug.in/ns/ext/patch#value"), toByteOffset: o, as: UInt32.self)
            b.storeBytes(of: 0, toByteOffset: o + 4, as: UInt32.self)
            b.storeBytes(of: UInt32(bytes.count), toByteOffset: o + 8, as: UInt32.self)
            b.storeBytes(of: id("http://lv2plug.in/ns/ext/atom#Path"), toByteOffset: o + 12, as: UInt32.self)
            (b + o + 16).initializeMemory(as: UInt8.self, repeating: 0, count: pathPadded)
            bytes.withUnsafeBytes { (b + o + 16).copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
            at += 16 + objectBody
        }
        b.storeBytes(of: UInt32(at - 8), toByteOffset: 0, as: UInt32.self)  // the body's size
        b.storeBytes(of: id("http://lv2plug.in/ns/ext/atom#Sequence"), toByteOffset: 4, as: UInt32.self)
        b.storeBytes(of: 0, toByteOffset: 8, as: UInt64.self)  // unit and pad
    }

    /// A sequence of pseudo-random events within its declared size (at most 4,096 bytes of
    /// the 8,192): random frames, types (an object, the URIDs this host mapped, noise), sizes
    /// (within the sequence or past it) and bodies, objects of patch:Set with random keys.
    static func writeRandomEvents(_ b: UnsafeMutableRawPointer) {
        func next() -> UInt32 {
            randomEvents = randomEvents &* 6364136223846793005 &+ 1442695040888963407
            return UInt32(truncatingIfNeeded: randomEvents >> 33)
        }
        let object = mapURI(nil, "http://lv2plug.in/ns/ext/atom#Object"), set = mapURI(nil, "http://lv2plug.in/ns/ext/patch#Set")
        let size = 8 + Int(next() % 4088)
        for k in stride(from: 16, to: 8 + size, by: 4) {
            let r = next()
            // Mostly small numbers (sizes, the URIDs mapped so far), some objects and patch:Set.
            let word: UInt32 = r % 4 == 0 ? object : r % 4 == 1 ? set : r % 4 == 2 ? r % UInt32(mapped.count + 2) : r % 64
            b.storeBytes(of: word, toByteOffset: k, as: UInt32.self)
        }
        b.storeBytes(of: UInt32(size), toByteOffset: 0, as: UInt32.self)
        b.storeBytes(of: mapURI(nil, "http://lv2plug.in/ns/ext/atom#Sequence"), toByteOffset: 4, as: UInt32.self)
    }

    /// The instance's LV2 state (`state:interface`'s save): key URI and value (paths and
    /// strings as text), as a JSON object's members.
    func state() -> String {
        guard let data = descriptor.pointee.extension_data?("http://lv2plug.in/ns/ext/state#interface") else { return "" }
        let interface = data.assumingMemoryBound(to: LV2_State_Interface.self)
        stored = []
        let status = interface.pointee.save?(handle, { _, key, value, size, _, _ in
            guard let value else { return LV2_STATE_ERR_UNKNOWN }
            let text = String(decoding: UnsafeRawBufferPointer(start: value, count: size).prefix { $0 != 0 }, as: UTF8.self)
            stored.append((mapped[Int(key) - 1], text))
            return LV2_STATE_SUCCESS
        }, nil, 0, features)
        guard status == LV2_STATE_SUCCESS else { return "\"error\": \(status.map { Int($0.rawValue) } ?? -1)" }
        return stored.map { "\"\($0.0)\": \"\($0.1)\"" }.joined(separator: ", ")
    }

    func close() {
        descriptor.pointee.deactivate?(handle)
        descriptor.pointee.cleanup(handle)
        sf_close(file)
    }
}

nonisolated(unsafe) let mapHandle = UnsafeMutablePointer<LV2_URID_Map>.allocate(capacity: 1)
mapHandle.initialize(to: LV2_URID_Map(handle: nil, map: mapURI))
let mapFeature = UnsafeMutablePointer<LV2_Feature>.allocate(capacity: 1)
mapFeature.initialize(to: LV2_Feature(URI: strdup("http://lv2plug.in/ns/ext/urid#map"), data: UnsafeMutableRawPointer(mapHandle)))
nonisolated(unsafe) let features = UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>.allocate(capacity: 2)
features[0] = UnsafePointer(mapFeature)
features[1] = nil

let instances = triples.map { Instance(library: $0.library, uri: $0.uri, path: $0.file, features: features, block: block, settings: settings) }
// Side by side, block by block, until every file has ended.
while instances.map({ $0.step(block) }).contains(true) {}
// The plugins' workers analyse what is still in their rings (milliseconds): then the readings.
usleep(500_000)
let workers = seconds(CLOCK_PROCESS_CPUTIME_ID) - seconds(CLOCK_THREAD_CPUTIME_ID)
for instance in instances {
    var line = instance.report(times: times)
    if saveState { line.insert(contentsOf: ", \"state\": {\(instance.state())}", at: line.index(line.endIndex, offsetBy: -1)) }
    if times {
        let channelSeconds = instances.reduce(0.0) { $0 + Double($1.frames) / Double($1.rate) * Double($1.channels) }
        line.insert(contentsOf: ", \"other_threads_ms_per_second_per_channel\": \(workers / max(1e-9, channelSeconds) * 1000)", at: line.index(line.endIndex, offsetBy: -1))
    }
    print(line)
}
for instance in instances { instance.close() }

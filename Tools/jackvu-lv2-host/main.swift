// jackvu-lv2-host: a small lilv host of the tests. It finds a plugin as hosts do — lilv reads
// the bundle's Turtle (manifest.ttl, jackvu.ttl), names the library, its ports, their indices,
// symbols, kinds and defaults — and lilv instantiates it with the urid:map feature; the host
// connects each port by what the Turtle says of it, runs audio files through instances side by
// side in one process, block by block and as fast as it can (offline), and prints each
// instance's control outputs (by the Turtle's symbols) as a JSON line. Two instances of one
// bundle, or of two bundles holding the same plugin (each instance its own lilv world, so each
// loads its own bundle's library), can run together; it is itself a Swift program (the Swift
// runtime loaded dynamically), so the plugin's own runtime (linked statically inside it) is
// tried beside another.
//
//   jackvu-lv2-host [--set SYMBOL=VALUE]... [--block FRAMES] [--times] [--json PATH] [--log PATH]
//                   [--osc URLS] [--random-events SEED] [--state] BUNDLE URI FILE [BUNDLE URI FILE]...
//
// BUNDLE is the bundle's folder (jackvu.lv2/) or a file in it. --json PATH, --log PATH and
// --osc URLS set the plugin's JSON lines file, loudness log and OSC destinations as a host's
// generic UI does: a `patch:Set` of the parameter (an `atom:Path`, an `atom:String` for --osc)
// on the control port, in the first run(). --random-events SEED fills the control port's
// sequence with pseudo-random events before each run() (random sizes, types and bodies,
// objects with patch:Set's keys), for the plugin's event reader to survive. --state asks each
// instance for its LV2 state after the run (`state:interface`'s save) and prints what it
// stored, by key, as "state" in its line (paths as stored: this host maps none).
//
// `jackvu-lv2-host --describe BUNDLE URI` prints instead what lilv reads of each port from the
// Turtle, a JSON line each: index, symbol, kind, minimum, maximum, default and unit (a unit of
// LV2's own by its name, `db`; one of the plugin's by its `units:symbol`).
//
// With --times each JSON line also carries what the host measured (BENCHMARKS.md): the wall
// time `instantiate` took, and `run()`'s own cost on the host's thread (its thread CPU clock
// around each call) per call and per second of audio per channel; and the CPU of the
// process's other threads (the plugins' workers: one instance, alone, is its worker's)
// per second of audio per channel.
//
// Exit 64 for a usage error, 66 for a file, bundle or plugin it cannot open, 65 for a file
// whose channels do not fit the plugin or a rate it refuses.
#if canImport(Glibc)
import Glibc
#endif
import CLilv
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
/// The parameters --json, --log and --osc set (parameter URI, value type URI, value).
nonisolated(unsafe) var parameterSettings: [(String, String, String)] = []
let atomPath = "http://lv2plug.in/ns/ext/atom#Path", atomString = "http://lv2plug.in/ns/ext/atom#String"
var saveState = false
var triples: [(bundle: String, uri: String, file: String)] = []
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
        parameterSettings.append((a == "--json" ? LV2Description.jsonParameter : LV2Description.logParameter, atomPath, s))
    case "--osc":
        guard let s = args.first else { fail("--osc takes OSC URLs", 64) }
        args.removeFirst()
        parameterSettings.append((LV2Description.oscParameter, atomString, s))
    case "--state":
        saveState = true
    case "--random-events":
        guard let s = args.first, let seed = UInt64(s), seed > 0 else { fail("--random-events takes a seed above 0", 64) }
        args.removeFirst()
        randomEvents = seed
    case "--describe":
        guard args.count >= 2 else { fail("--describe takes BUNDLE URI", 64) }
        describe(bundle: args[0], uri: args[1])
        exit(0)
    case "-h", "--help":
        print("usage: jackvu-lv2-host [--set SYMBOL=VALUE]... [--block FRAMES] [--times] [--json PATH] [--log PATH] [--osc URLS] [--random-events SEED] [--state] BUNDLE URI FILE [BUNDLE URI FILE]...")
        exit(0)
    default:
        positional.append(a)
    }
}
guard !positional.isEmpty, positional.count % 3 == 0 else {
    fail("usage: jackvu-lv2-host [--set SYMBOL=VALUE]... [--block FRAMES] [--times] [--json PATH] [--log PATH] [--osc URLS] [--random-events SEED] [--state] BUNDLE URI FILE [BUNDLE URI FILE]...", 64)
}
for k in stride(from: 0, to: positional.count, by: 3) { triples.append((positional[k], positional[k + 1], positional[k + 2])) }

// MARK: The instances

/// What a port is, by the classes its Turtle gives it: `audio-in`, `audio-out`, `control-in`,
/// `control-out`, `atom-in`, `atom-out`, or `other`.
struct PortClasses {
    private let classes: [(name: String, type: OpaquePointer, direction: OpaquePointer)]

    init(_ world: OpaquePointer) {
        let (input, output) = (LILV_URI_INPUT_PORT, LILV_URI_OUTPUT_PORT)
        let atom = "http://lv2plug.in/ns/ext/atom#AtomPort"
        classes = [("audio-in", LILV_URI_AUDIO_PORT, input), ("audio-out", LILV_URI_AUDIO_PORT, output),
                   ("control-in", LILV_URI_CONTROL_PORT, input), ("control-out", LILV_URI_CONTROL_PORT, output),
                   ("atom-in", atom, input), ("atom-out", atom, output)]
            .map { ($0.0, lilv_new_uri(world, $0.1), lilv_new_uri(world, $0.2)) }
    }

    func name(_ plugin: OpaquePointer, _ port: OpaquePointer?) -> String {
        classes.first { lilv_port_is_a(plugin, port, $0.type) && lilv_port_is_a(plugin, port, $0.direction) }?.name ?? "other"
    }

    func free() { for c in classes { lilv_node_free(c.type); lilv_node_free(c.direction) } }
}

/// `--describe`: every port of plugin `uri` in `bundle`, as lilv reads it, a JSON line each.
func describe(bundle: String, uri: String) {
    guard let world = lilv_world_new() else { fail("lilv cannot make a world", 66) }
    let folder = bundle.hasSuffix("/") ? bundle : bundle + "/"
    let bundleNode = lilv_new_file_uri(world, nil, folder)
    lilv_world_load_bundle(world, bundleNode)
    let uriNode = lilv_new_uri(world, uri)
    guard let plugin = lilv_plugins_get_by_uri(lilv_world_get_all_plugins(world), uriNode) else {
        fail("the bundle \(folder) has no plugin \(uri)", 66)
    }
    let count = Int(lilv_plugin_get_num_ports(plugin))
    let (minimum, maximum, defaults) = (UnsafeMutablePointer<Float>.allocate(capacity: count),
                                        UnsafeMutablePointer<Float>.allocate(capacity: count), UnsafeMutablePointer<Float>.allocate(capacity: count))
    lilv_plugin_get_port_ranges_float(plugin, minimum, maximum, defaults)
    func node(_ u: String) -> OpaquePointer { lilv_new_uri(world, u) }
    let unitKey = node("http://lv2plug.in/ns/extensions/units#unit"), symbolKey = node("http://lv2plug.in/ns/extensions/units#symbol")
    let classes = PortClasses(world)
    func number(_ x: Float) -> String { x.isFinite ? "\(x)" : "null" }
    for i in 0..<count {
        let port = lilv_plugin_get_port_by_index(plugin, UInt32(i))
        let symbol = String(cString: lilv_node_as_string(lilv_port_get_symbol(plugin, port)))
        let kind = classes.name(plugin, port)
        var unit = "null"
        if let u = lilv_port_get(plugin, port, unitKey) {
            if lilv_node_is_uri(u), let text = lilv_node_as_uri(u) {
                let s = String(cString: text)
                unit = "\"" + String(s[(s.lastIndex(of: "#").map { s.index(after: $0) } ?? s.startIndex)...]) + "\""
            } else if let symbolNode = lilv_world_get(world, u, symbolKey, nil) {
                unit = "\"" + String(cString: lilv_node_as_string(symbolNode)) + "\""
                lilv_node_free(symbolNode)
            }
            lilv_node_free(u)
        }
        print("{\"index\": \(i), \"symbol\": \"\(symbol)\", \"kind\": \"\(kind)\", \"minimum\": \(number(minimum[i])), "
              + "\"maximum\": \(number(maximum[i])), \"default\": \(number(defaults[i])), \"unit\": \(unit)}")
    }
}

/// Seconds on `clock`.
func seconds(_ clock: clockid_t) -> Double {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// A port as the plugin's Turtle describes it (lilv): its index, symbol, kind and default.
struct DescribedPort {
    enum Kind { case audioIn(Int), audioOut(Int), controlIn, controlOut, atomIn, atomOut, other }
    let index: Int, symbol: String, kind: Kind, defaultValue: Float
}

/// One plugin instance (in a lilv world of its own), its file and its port buffers.
final class Instance {
    let library: String, uri: String, path: String
    let world: OpaquePointer
    let instance: UnsafeMutablePointer<LilvInstance>
    let descriptor: UnsafePointer<LV2_Descriptor>
    let handle: LV2_Handle
    let ports: [DescribedPort]
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
    /// with --json, --log or --osc, empty after.
    let sequence = UnsafeMutableRawPointer.allocate(byteCount: 8192, alignment: 8)
    /// An atom output port's buffer (another plugin's notifications, which this host drops):
    /// before each run an empty chunk of its capacity, as LV2 asks of a host.
    let notify = UnsafeMutableRawPointer.allocate(byteCount: 65536, alignment: 8)

    init(bundle: String, uri: String, path: String, features: UnsafePointer<UnsafePointer<LV2_Feature>?>, block: Int,
         settings: [(String, Float)]) {
        (self.uri, self.path) = (uri, path)
        // The bundle's folder (a file given: the folder it is in).
        var st = stat()
        guard stat(bundle, &st) == 0 else { fail("cannot open '\(bundle)': \(String(cString: strerror(errno)))", 66) }
        var folder = (st.st_mode & S_IFMT) == S_IFDIR ? bundle : String(bundle[..<(bundle.lastIndex(of: "/") ?? bundle.startIndex)])
        if folder.isEmpty { folder = "." }
        if !folder.hasPrefix("/") {
            if let cwd = getcwd(nil, 0) {
                folder = String(cString: cwd) + "/" + folder
                free(cwd)
            }
        }
        if !folder.hasSuffix("/") { folder += "/" }
        guard let world = lilv_world_new() else { fail("lilv cannot make a world", 66) }
        self.world = world
        let bundleNode = lilv_new_file_uri(world, nil, folder)
        lilv_world_load_bundle(world, bundleNode)
        lilv_node_free(bundleNode)
        let uriNode = lilv_new_uri(world, uri)
        defer { lilv_node_free(uriNode) }
        guard let plugin = lilv_plugins_get_by_uri(lilv_world_get_all_plugins(world), uriNode) else {
            fail("the bundle \(folder) has no plugin \(uri)", 66)
        }
        var libraryPath = "?"
        if let node = lilv_plugin_get_library_uri(plugin), let parsed = lilv_file_uri_parse(lilv_node_as_uri(node), nil) {
            libraryPath = String(cString: parsed)
            lilv_free(parsed)
        }
        library = libraryPath
        // The ports, as the Turtle has them.
        let count = Int(lilv_plugin_get_num_ports(plugin))
        let defaults = UnsafeMutablePointer<Float>.allocate(capacity: count)
        defer { defaults.deallocate() }
        lilv_plugin_get_port_ranges_float(plugin, nil, nil, defaults)
        let classes = PortClasses(world)
        defer { classes.free() }
        var described: [DescribedPort] = []
        var ins = 0, outs = 0
        for i in 0..<count {
            let port = lilv_plugin_get_port_by_index(plugin, UInt32(i))
            let symbol = String(cString: lilv_node_as_string(lilv_port_get_symbol(plugin, port)))
            let kind: DescribedPort.Kind
            switch classes.name(plugin, port) {
            case "audio-in": kind = .audioIn(ins); ins += 1
            case "audio-out": kind = .audioOut(outs); outs += 1
            case "control-in": kind = .controlIn
            case "control-out": kind = .controlOut
            case "atom-in": kind = .atomIn
            case "atom-out": kind = .atomOut
            default: kind = .other
            }
            described.append(DescribedPort(index: Int(lilv_port_get_index(plugin, port)), symbol: symbol, kind: kind,
                                           defaultValue: defaults[i].isFinite ? defaults[i] : 0))
        }
        ports = described
        var info = SF_INFO()
        guard let file = sf_open(path, Int32(SFM_READ), &info) else { fail("cannot open '\(path)': \(String(cString: sf_strerror(nil)))", 66) }
        self.file = file
        channels = Int(info.channels)
        rate = Int(info.samplerate)
        guard channels == ins, ins == outs else { fail("'\(path)' has \(channels) channels; \(uri) takes \(ins)", 65) }
        let started = seconds(CLOCK_MONOTONIC)
        guard let instance = lilv_plugin_instantiate(plugin, Double(rate), features) else {
            fail("\(uri) refused to instantiate at \(rate) Hz", 65)
        }
        instantiateSeconds = seconds(CLOCK_MONOTONIC) - started
        self.instance = instance
        descriptor = instance.pointee.lv2_descriptor
        handle = instance.pointee.lv2_handle
        interleaved = .allocate(capacity: block * channels)
        audio = (0..<(2 * channels)).map { _ in .allocate(capacity: block) }
        controls = .allocate(capacity: count)
        for p in ports {
            controls[p.index] = p.defaultValue
            for (symbol, value) in settings where symbol == p.symbol { controls[p.index] = value }
            switch p.kind {
            case .audioIn(let c): descriptor.pointee.connect_port(handle, UInt32(p.index), audio[c])
            case .audioOut(let c): descriptor.pointee.connect_port(handle, UInt32(p.index), audio[channels + c])
            case .atomIn:
                Instance.writeSequence(sequence, setting: parameterSettings)
                descriptor.pointee.connect_port(handle, UInt32(p.index), sequence)
            case .atomOut: descriptor.pointee.connect_port(handle, UInt32(p.index), notify)
            case .controlIn, .controlOut: descriptor.pointee.connect_port(handle, UInt32(p.index), controls + p.index)
            case .other: descriptor.pointee.connect_port(handle, UInt32(p.index), nil)
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
        emptyNotify()
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
        emptyNotify()
        descriptor.pointee.run(handle, 0)
        var fields: [String] = []
        for p in ports {
            guard case .controlOut = p.kind else { continue }
            let v = controls[p.index]
            fields.append("\"\(p.symbol)\": " + (v.isFinite ? "\(v)" : "null"))
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

    /// The atom output's buffer as a host hands it to run(): an `atom:Chunk` of its capacity.
    func emptyNotify() {
        notify.storeBytes(of: UInt32(65536 - 8), toByteOffset: 0, as: UInt32.self)
        notify.storeBytes(of: mapURI(nil, "http://lv2plug.in/ns/ext/atom#Chunk"), toByteOffset: 4, as: UInt32.self)
    }

    /// An atom sequence (LV2 atom layout, each atom padded to 8 bytes): an event at frame 0
    /// for each setting, a `patch:Set` object of the parameter to the value, an atom of the
    /// type given (none: empty).
    static func writeSequence(_ b: UnsafeMutableRawPointer, setting values: [(String, String, String)]) {
        func id(_ uri: String) -> UInt32 { mapURI(nil, uri) }
        var at = 16
        for (parameter, type, value) in values {
            let bytes = Array(value.utf8) + [0]
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
            b.storeBytes(of: id(type), toByteOffset: o + 12, as: UInt32.self)
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
        lilv_instance_free(instance)  // cleanup, and the library closed
        lilv_world_free(world)
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

let instances = triples.map { Instance(bundle: $0.bundle, uri: $0.uri, path: $0.file, features: features, block: block, settings: settings) }
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
